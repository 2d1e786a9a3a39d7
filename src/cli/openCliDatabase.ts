import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { openDatabase, poolOf } from '../createLedger.js';
import { migrate } from '../database/migrate.js';

/** The database a CLI command works on: `DATABASE_URL`, or the embedded server under `.data/postgres`. */
export interface CliDatabase {
  dataSource: DataSource;
  pool: Pool;
  close(): Promise<void>;
}

/**
 * Reconciling a large report runs single statements over millions of rows (storing 1M partner rows took
 * 40-50 s in bench/), far beyond the ledger's 10 s hot-path timeout. The CLI still keeps a bound, so a
 * frozen database fails a command instead of hanging it.
 */
const CLI_QUERY_TIMEOUT_MS = 30 * 60_000;

export async function openCliDatabase(options: { migrate?: boolean } = {}): Promise<CliDatabase> {
  const { dataSource, release } = await openDatabase(
    {},
    process.env.INTENT_LEDGER_DATA_DIR ?? '.data/postgres',
    10,
    CLI_QUERY_TIMEOUT_MS,
  );
  try {
    if (options.migrate ?? true) await migrate(dataSource);
  } catch (error) {
    await release();
    throw error;
  }
  return { dataSource, pool: poolOf(dataSource), close: release };
}
