import { type IntentErrorContext, LedgerError } from './LedgerError.js';

/**
 * The call definitely did not reach the partner (connection refused, rate limited, ...). It is recorded as
 * `not_executed`, so simply retrying (redelivering the message) claims a new attempt.
 */
export class IntentNotExecutedError extends LedgerError {
  readonly code = 'INTENT_NOT_EXECUTED';
  override readonly name = 'IntentNotExecutedError';
  readonly attempt: number;
  readonly retryable = true;

  constructor(context: IntentErrorContext & { attempt: number; detail: string }) {
    super(
      `${context.partner}/${context.key}: attempt ${context.attempt} was not executed (${context.detail}); safe to retry`,
      context,
    );
    this.attempt = context.attempt;
  }
}
