import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';
import type { DiscrepancyStatus } from '../../shared/status.js';
import type { ReviewAction } from '../discrepancyTypes.js';

/** Why one id of a review request was refused. */
export interface RefusedDiscrepancy {
  id: string;
  /** Its current status; null when there is no such discrepancy. */
  status: DiscrepancyStatus | null;
  /** `DISCREPANCY_NOT_FOUND` or `DISCREPANCY_TRANSITION_NOT_ALLOWED`. */
  reason: 'DISCREPANCY_NOT_FOUND' | 'DISCREPANCY_TRANSITION_NOT_ALLOWED';
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
          .map((r) => (r.status === null ? `${r.id} does not exist` : `${r.id} is ${r.status}`))
          .join('; ') +
        '; nothing was changed',
      NO_INTENT,
    );
    this.action = action;
    this.refused = refused;
  }
}
