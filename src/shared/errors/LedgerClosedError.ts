import { intentLabel, LedgerError, type LedgerErrorContext } from './LedgerError.js';

/**
 * The ledger was closed (`ledger.close()`): its pool is gone, so nothing was claimed, recorded or read.
 * Every method of a closed ledger throws this one error, before it touches the database.
 */
export class LedgerClosedError extends LedgerError {
  readonly code = 'LEDGER_CLOSED';
  override readonly name = 'LedgerClosedError';
  /** The method that was called. */
  readonly method: string;

  constructor(context: LedgerErrorContext & { method: string }) {
    const about =
      context.partner !== undefined || context.intentId !== undefined ? `${intentLabel(context)}: ` : '';
    super(`${about}the ledger is closed: ${context.method}() was called after close()`, context);
    this.method = context.method;
  }
}
