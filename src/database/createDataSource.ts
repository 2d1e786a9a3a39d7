import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { migrations } from '../../migrations/index.js';
import { BULK_QUERY_TIMEOUT_MS, DEFAULT_POOL_SIZE } from './databaseDefaults.js';

export interface DataSourceOptions {
  /** PostgreSQL connection string. */
  url: string;
  /** Connections in the pool. @default DEFAULT_POOL_SIZE (10) */
  poolSize?: number;
  /** Name reported in `pg_stat_activity.application_name`. @default 'intent-ledger' */
  applicationName?: string;
  /**
   * How long one statement may wait for its answer before the client gives up on it. The ledger passes its
   * own, shorter bound (`LedgerOptions.queryTimeoutMs`).
   * @default BULK_QUERY_TIMEOUT_MS (30 minutes: migrations and other bulk work)
   */
  queryTimeoutMs?: number;
}

/**
 * The TypeORM data source for the ledger's database. The schema is owned by the SQL migrations in
 * `migrations/`, never by `synchronize`.
 */
export function createDataSource(options: DataSourceOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    migrations,
    migrationsTableName: 'migrations',
    synchronize: false,
    logging: false,
    applicationName: options.applicationName ?? 'intent-ledger',
    poolSize: options.poolSize ?? DEFAULT_POOL_SIZE,
    extra: {
      // A dead server must surface as an error, not as a caller waiting forever for a connection.
      connectionTimeoutMillis: 10_000,
      query_timeout: options.queryTimeoutMs ?? BULK_QUERY_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
    },
  });
}
