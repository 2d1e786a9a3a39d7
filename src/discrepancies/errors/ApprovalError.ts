import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';

/**
 * A four-eyes step that cannot be taken: `PROPOSAL_PENDING` (one already waits), `NO_PROPOSAL` (nothing to
 * approve), `OWN_PROPOSAL` (the proposer cannot approve or reject their own), `TRANSITION_NOT_ALLOWED` (the
 * status does not allow the action), `PROPOSAL_STALE` (the discrepancy's amount at risk or currency changed since
 * the proposal: it was withdrawn), `NOT_FOUND`.
 */
export class ApprovalError extends LedgerError {
  override readonly name = 'ApprovalError';

  constructor(
    readonly code:
      | 'PROPOSAL_PENDING'
      | 'NO_PROPOSAL'
      | 'OWN_PROPOSAL'
      | 'TRANSITION_NOT_ALLOWED'
      | 'PROPOSAL_STALE'
      | 'NOT_FOUND',
    message: string,
  ) {
    super(message, NO_INTENT);
  }
}
