import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../database/createDataSource.js';
import { type EmbeddedServer, startEmbeddedPostgres } from '../database/embeddedPostgres.js';
import { migrate } from '../database/migrate.js';
import { assertSchemaNotNewer } from '../database/schemaGuard.js';
import { DatabaseNotConfiguredError } from '../shared/errors/DatabaseNotConfiguredError.js';
import { Ledger } from './ledger.js';
import { type LedgerOptions, resolveLedgerOptions } from './options.js';

/**
 * Opens the ledger: connects to `dataSource`, `databaseUrl` or `DATABASE_URL` (or, only when the caller
 * opted in with `embedded`, to a private embedded PostgreSQL), applies pending migrations unless
 * `migrate: false`, refuses a database migrated by a newer version (`SchemaTooNewError`), and returns the
 * facade. With none of them it throws {@link DatabaseNotConfiguredError}
 * before touching anything.
 */
export async function createLedger(options: LedgerOptions = {}): Promise<Ledger> {
  const resolved = resolveLedgerOptions(options);
  const { dataSource, release } = await openDatabase(
    options,
    resolved.embeddedDataDir,
    resolved.poolSize,
    resolved.queryTimeoutMs,
  );
  try {
    if (resolved.migrate) await migrate(dataSource);
    else await assertSchemaNotNewer(dataSource);
    return new Ledger(dataSource, poolOf(dataSource), resolved, release);
  } catch (error) {
    await release();
    throw error;
  }
}

/** The database behind a ledger, and how to let go of exactly what was opened here. */
export interface OpenedDatabase {
  dataSource: DataSource;
  release: () => Promise<void>;
}

/**
 * Connects to the configured database: the data source, else the URL, else the embedded server when
 * `embeddedDataDir` says where (the caller opted in), else {@link DatabaseNotConfiguredError}.
 */
export async function openDatabase(
  options: Pick<LedgerOptions, 'databaseUrl' | 'dataSource'>,
  embeddedDataDir: string | undefined,
  poolSize: number,
  queryTimeoutMs: number,
): Promise<OpenedDatabase> {
  if (options.dataSource) {
    const dataSource = options.dataSource;
    if (dataSource.options.type !== 'postgres')
      throw new TypeError('the ledger needs a PostgreSQL data source');
    const initialisedHere = !dataSource.isInitialized;
    if (initialisedHere) await dataSource.initialize();
    return { dataSource, release: async () => (initialisedHere ? dataSource.destroy() : undefined) };
  }
  let embedded: EmbeddedServer | undefined;
  let url = options.databaseUrl ?? process.env.DATABASE_URL;
  if (!url) {
    if (embeddedDataDir === undefined) throw new DatabaseNotConfiguredError();
    embedded = await startEmbeddedPostgres({ dataDir: embeddedDataDir, persistent: true });
    url = embedded.url;
  }
  const dataSource = createDataSource({ url, poolSize, queryTimeoutMs });
  try {
    await dataSource.initialize();
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
  return {
    dataSource,
    release: async () => {
      await dataSource.destroy();
      await embedded?.stop();
    },
  };
}

/**
 * The pg pool under TypeORM's PostgreSQL driver. The hot path (claim, complete) talks to it directly:
 * TypeORM's `query()` adds a query runner, logging and event broadcast per statement, which costs more
 * than the statements themselves on a fast partner (bench/ledger.ts measures it; docs/PERFORMANCE.md).
 */
export function poolOf(dataSource: DataSource): Pool {
  const pool = (dataSource.driver as unknown as { master?: Pool }).master;
  if (!pool) throw new Error('the data source is not initialised');
  return pool;
}
