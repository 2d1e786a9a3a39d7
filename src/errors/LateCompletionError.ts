import { LedgerError, type LedgerErrorContext } from './LedgerError.js';

/**
 * The partner's success for this attempt arrived after the intent had been settled another way (for example
 * the reconciler proved "not executed" and a newer attempt ran). The answer is kept in the attempt's history
 * and raised as a `late_completion` discrepancy for finance; the ledger does not overwrite the settlement.
 */
export class LateCompletionError extends LedgerError {
  readonly code = 'LATE_COMPLETION';
  override readonly name = 'LateCompletionError';
  readonly attempt: number;
  /** The discrepancy raised for it (null when the same late answer was already raised). */
  readonly discrepancyId: string | null;

  constructor(
    context: LedgerErrorContext & { attempt: number; discrepancyId: string | null; settledAs: string },
  ) {
    super(
      `${context.partner}/${context.key}: the partner's success for attempt ${context.attempt} arrived after the intent ` +
        `was settled as ${context.settledAs}; raised as a late_completion discrepancy for review`,
      context,
    );
    this.attempt = context.attempt;
    this.discrepancyId = context.discrepancyId;
  }
}
