import { LedgerError, NO_INTENT } from './LedgerError.js';

/**
 * The database was migrated by a newer intent-ledger than this one: it records a migration this build does
 * not know. Running against it could damage what the newer version wrote (the way an old version running
 * during migration 0006 damages attempt history), so every entry point refuses until this one is upgraded.
 */
export class SchemaTooNewError extends LedgerError {
  readonly code = 'SCHEMA_TOO_NEW';
  override readonly name = 'SchemaTooNewError';
  /** The recorded migrations this build does not know, in the order they were applied. */
  readonly unknownMigrations: readonly string[];
  /** The newest migration this build knows. */
  readonly newestKnown: string;

  constructor(context: { unknownMigrations: string[]; newestKnown: string }) {
    super(
      `the database was migrated by a newer version of intent-ledger: it records migration ` +
        `${context.unknownMigrations.join(', ')}, which this version does not know (it knows up to ` +
        `${context.newestKnown}). Upgrade intent-ledger here before running it against this database.`,
      NO_INTENT,
    );
    this.unknownMigrations = context.unknownMigrations;
    this.newestKnown = context.newestKnown;
  }
}
