import { intentLabel, LedgerError, type LedgerErrorContext } from './LedgerError.js';

/**
 * The ledger's database could not be reached or failed. Nothing was decided: if this happened before the
 * claim, the partner was not called; if it happened while recording an outcome, the intent stays
 * in progress and becomes outcome unknown when its lease ends, for the reconciler to settle.
 */
export class LedgerUnavailableError extends LedgerError {
  readonly code = 'LEDGER_UNAVAILABLE';
  override readonly name = 'LedgerUnavailableError';

  constructor(context: LedgerErrorContext & { during: string }) {
    super(
      `${intentLabel(context)}: the ledger database failed while ${context.during}: ${describe(context.cause)}`,
      context,
    );
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  return String(cause);
}
