import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';

/** One or more discrepancy ids do not exist (or are not ids at all). Nothing was changed. */
export class DiscrepancyNotFoundError extends LedgerError {
  readonly code = 'DISCREPANCY_NOT_FOUND';
  override readonly name = 'DiscrepancyNotFoundError';
  readonly ids: string[];

  constructor(ids: string[]) {
    super(
      ids.length === 1
        ? `discrepancy ${ids[0]} does not exist`
        : `discrepancies do not exist: ${ids.join(', ')}`,
      NO_INTENT,
    );
    this.ids = ids;
  }
}
