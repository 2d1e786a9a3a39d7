import { migrate } from '../../database/migrate.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';

export const migrateUsage = 'intent-ledger migrate            apply pending database migrations';

/** `intent-ledger migrate`: applies pending migrations (safe to run from many processes at once). */
export async function migrateCommand(args: string[]): Promise<number> {
  if (args.length > 0) throw new UsageError(`migrate takes no arguments (got ${args.join(' ')})`);
  const database = await openCliDatabase({ migrate: false });
  try {
    const { applied } = await migrate(database.dataSource);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date');
    return 0;
  } finally {
    await database.close();
  }
}
