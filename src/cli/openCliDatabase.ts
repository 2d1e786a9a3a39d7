import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import {
  BULK_QUERY_TIMEOUT_MS,
  DEFAULT_EMBEDDED_DATA_DIR,
  DEFAULT_POOL_SIZE,
} from '../database/databaseDefaults.js';
import { migrate } from '../database/migrate.js';
import { openDatabase, poolOf } from '../ledger/createLedger.js';

/** The database a CLI command works on: `DATABASE_URL`, or the embedded server under `.data/postgres`. */
export interface CliDatabase {
  dataSource: DataSource;
  pool: Pool;
  close(): Promise<void>;
}

export async function openCliDatabase(options: { migrate?: boolean } = {}): Promise<CliDatabase> {
  const { dataSource, release } = await openDatabase(
    {},
    process.env.INTENT_LEDGER_DATA_DIR ?? DEFAULT_EMBEDDED_DATA_DIR,
    DEFAULT_POOL_SIZE,
    // Commands reconcile, export and purge: bulk statements, not the ledger's hot path.
    BULK_QUERY_TIMEOUT_MS,
  );
  try {
    if (options.migrate ?? true) await migrate(dataSource);
  } catch (error) {
    await release();
    throw error;
  }
  return { dataSource, pool: poolOf(dataSource), close: release };
}
