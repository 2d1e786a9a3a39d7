/**
 * The database defaults, defined once: the library, the CLI, `npm start` and the TypeORM CLI read them here.
 */

/** Where the embedded PostgreSQL keeps its data when it is used (relative to the working directory). */
export const DEFAULT_EMBEDDED_DATA_DIR = '.data/postgres';

/**
 * Connections in a pool. Each in-flight `run()` holds one only while a statement runs, never during the
 * partner call, so a small pool serves many concurrent calls.
 */
export const DEFAULT_POOL_SIZE = 10;

/**
 * How long one of the ledger's statements may wait for its answer. The hot path's statements are single-row:
 * a database that stops answering without closing connections (a partition, a frozen VM) must fail the
 * call, not make the consumer wait forever.
 */
export const LEDGER_QUERY_TIMEOUT_MS = 10_000;

/**
 * How long a bulk statement may run: migrations, reconciling a large report, exports, purges. These run
 * single statements over millions of rows (docs/PERFORMANCE.md has the figures), far beyond the ledger's
 * bound; they still get one, so a frozen database fails a command instead of hanging it.
 */
export const BULK_QUERY_TIMEOUT_MS = 30 * 60_000;
