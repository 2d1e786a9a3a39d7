import { type IntentErrorContext, LedgerError } from './LedgerError.js';

/**
 * The partner's success for this attempt arrived after the intent had been settled another way (for example
 * the reconciler proved "not executed" and a newer attempt ran). The answer is kept in the attempt's history
 * and raised as a `late_completion` discrepancy for finance; a settlement by another attempt is never
 * overwritten. Only when the intent sits `not_executed` on this very attempt (nothing retried it yet) does the
 * answer correct it to `completed`, so the next delivery replays instead of charging again (`corrected`).
 */
export class LateCompletionError extends LedgerError {
  readonly code = 'LATE_COMPLETION';
  override readonly name = 'LateCompletionError';
  readonly attempt: number;
  /** The discrepancy raised for it (null when the same late answer was already raised). */
  readonly discrepancyId: string | null;
  /** True when the `not_executed` intent was corrected to `completed` with this answer. */
  readonly corrected: boolean;

  constructor(
    context: IntentErrorContext & {
      attempt: number;
      discrepancyId: string | null;
      settledAs: string;
      corrected: boolean;
    },
  ) {
    super(
      `${context.partner}/${context.key}: the partner's success for attempt ${context.attempt} arrived after the intent ` +
        `was settled as ${context.settledAs}${context.corrected ? ' (it is now completed with this answer)' : ''}; ` +
        'raised as a late_completion discrepancy for review',
      context,
    );
    this.attempt = context.attempt;
    this.discrepancyId = context.discrepancyId;
    this.corrected = context.corrected;
  }
}
