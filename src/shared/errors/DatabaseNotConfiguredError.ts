import { LedgerError, NO_INTENT } from './LedgerError.js';

/**
 * `createLedger()` was given no database. The ledger refuses to guess: a private embedded server per process
 * would give every pod its own dedup store, the very double charge the ledger exists to prevent. Name the
 * shared database (`databaseUrl` or `DATABASE_URL`), or opt in to the embedded one for a trial
 * (`embedded: true`).
 */
export class DatabaseNotConfiguredError extends LedgerError {
  readonly code = 'DATABASE_NOT_CONFIGURED';
  override readonly name = 'DatabaseNotConfiguredError';

  constructor() {
    super(
      'no database configured: set DATABASE_URL or pass createLedger({ databaseUrl }) (or a dataSource); ' +
        'for a local trial only, opt in to a private embedded PostgreSQL with createLedger({ embedded: true })',
      NO_INTENT,
    );
  }
}
