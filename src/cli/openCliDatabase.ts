import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import {
  BULK_QUERY_TIMEOUT_MS,
  DEFAULT_EMBEDDED_DATA_DIR,
  DEFAULT_POOL_SIZE,
} from '../database/databaseDefaults.js';
import { migrate } from '../database/migrate.js';
import { assertSchemaNotNewer } from '../database/schemaGuard.js';
import { openDatabase, poolOf } from '../ledger/createLedger.js';

/** The database a CLI command works on: `DATABASE_URL`, or the embedded server under `.data/postgres`. */
export interface CliDatabase {
  dataSource: DataSource;
  pool: Pool;
  close(): Promise<void>;
}

/**
 * The CLI (and `npm start`) is the one place that falls back to the embedded server without being asked:
 * it is the zero-setup path for trying the product. It says so on stderr, so a production job that lost
 * its `DATABASE_URL` shows it in its log instead of quietly working on a private database.
 */
export async function openCliDatabase(options: { migrate?: boolean } = {}): Promise<CliDatabase> {
  const embeddedDataDir = process.env.INTENT_LEDGER_DATA_DIR ?? DEFAULT_EMBEDDED_DATA_DIR;
  if (!process.env.DATABASE_URL)
    console.error(
      `intent-ledger: DATABASE_URL is not set: using the embedded PostgreSQL under ${embeddedDataDir} ` +
        '(for trying it out; set DATABASE_URL to the shared database in production)',
    );
  const { dataSource, release } = await openDatabase(
    {},
    embeddedDataDir,
    DEFAULT_POOL_SIZE,
    // Commands reconcile, export and purge: bulk statements, not the ledger's hot path.
    BULK_QUERY_TIMEOUT_MS,
  );
  try {
    if (options.migrate ?? true) await migrate(dataSource);
    else await assertSchemaNotNewer(dataSource);
  } catch (error) {
    await release();
    throw error;
  }
  return { dataSource, pool: poolOf(dataSource), close: release };
}
