import { intentLabel, LedgerError, type LedgerErrorContext } from './LedgerError.js';

/**
 * The partner may or may not have executed this intent (timeout, reset, worker died, lease ended).
 * The ledger will not call the partner again until reconciliation has found out. Do not drop the message:
 * park it and deliver it again later (examples/rabbitmqConsumer.ts uses a delay queue). By then the intent
 * is completed (the delivery replays it), not_executed (it is charged as the next attempt) or still unknown
 * (park it again). Requeuing at once would only spin: every delivery gets this error until then.
 */
export class IntentOutcomeUnknownError extends LedgerError {
  readonly code = 'INTENT_OUTCOME_UNKNOWN';
  override readonly name = 'IntentOutcomeUnknownError';
  readonly attempt: number;

  constructor(context: LedgerErrorContext & { attempt: number; detail?: string }) {
    super(
      `${intentLabel(context)}: outcome of attempt ${context.attempt} is unknown` +
        `${context.detail ? ` (${context.detail})` : ''}; it waits for reconciliation and will not be retried blindly`,
      context,
    );
    this.attempt = context.attempt;
  }
}
