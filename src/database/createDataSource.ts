import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { migrations } from '../../migrations/index.js';

export interface DataSourceOptions {
  /** PostgreSQL connection string. */
  url: string;
  /**
   * Connections in the pool. Each in-flight `run()` holds one only while a statement runs, never during
   * the partner call, so a small pool serves many concurrent calls.
   * @default 10
   */
  poolSize?: number;
  /** Name reported in `pg_stat_activity.application_name`. @default 'intent-ledger' */
  applicationName?: string;
  /**
   * How long one statement may wait for its answer before the client gives up on it. Without it, a database
   * that stops answering without closing connections (a partition, a frozen VM) makes callers wait forever.
   * @default 30000
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
    poolSize: options.poolSize ?? 10,
    extra: {
      // A dead server must surface as an error, not as a caller waiting forever for a connection.
      connectionTimeoutMillis: 10_000,
      query_timeout: options.queryTimeoutMs ?? 30_000,
      idleTimeoutMillis: 30_000,
    },
  });
}
