import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';
import type { DiscrepancyStatus } from '../../shared/status.js';
import type { ReviewAction } from '../discrepancyTypes.js';

/** Why one id of a review request was refused. */
export interface RefusedDiscrepancy {
  id: string;
  /** Its current status; null when there is no such discrepancy. */
  status: DiscrepancyStatus | null;
  /**
   * `DISCREPANCY_NOT_FOUND`, `DISCREPANCY_TRANSITION_NOT_ALLOWED`, or `DISCREPANCY_APPROVAL_REQUIRED` (its
   * amount at risk is above the approval threshold: a second resolver must approve a proposal instead).
   */
  reason: 'DISCREPANCY_NOT_FOUND' | 'DISCREPANCY_TRANSITION_NOT_ALLOWED' | 'DISCREPANCY_APPROVAL_REQUIRED';
  /** With `DISCREPANCY_APPROVAL_REQUIRED`: the threshold in force for its currency, a decimal string. */
  threshold?: string;
}

/**
 * A review action (acknowledge, resolve, dismiss, assign) was refused for at least one id. Requests are
 * all-or-nothing: when this is thrown, no discrepancy of the request was changed.
 */
export class DiscrepancyTransitionError extends LedgerError {
  readonly code = 'DISCREPANCY_TRANSITION_NOT_ALLOWED';
  override readonly name = 'DiscrepancyTransitionError';
  readonly action: ReviewAction | 'assign';
  /** Every offending id, in id order, with its current state. */
  readonly refused: RefusedDiscrepancy[];

  constructor(action: ReviewAction | 'assign', refused: RefusedDiscrepancy[]) {
    super(
      `cannot ${action} ${refused.length === 1 ? 'discrepancy' : 'discrepancies'}: ` +
        refused
          .map((r) =>
            r.status === null
              ? `${r.id} does not exist`
              : r.reason === 'DISCREPANCY_APPROVAL_REQUIRED'
                ? `${r.id} needs a second resolver's approval (amount at risk above ${r.threshold})`
                : `${r.id} is ${r.status}`,
          )
          .join('; ') +
        '; nothing was changed',
      NO_INTENT,
    );
    this.action = action;
    this.refused = refused;
  }
}
