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

export async function openCliDatabase(options: { migrate?: boolean } = {}): Promise<CliDatabase> {
  const { dataSource, release } = await openDatabase(
    {},
    process.env.INTENT_LEDGER_DATA_DIR ?? '.data/postgres',
  );
  try {
    if (options.migrate ?? true) await migrate(dataSource);
  } catch (error) {
    await release();
    throw error;
  }
  return { dataSource, pool: poolOf(dataSource), close: release };
}
