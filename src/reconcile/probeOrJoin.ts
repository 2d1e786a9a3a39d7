import type { Queryable } from '../database/queryable.js';

/**
 * Rows of a ledger table per report row above which a run reads that table by one index probe per report
 * row instead of joining it whole. About what one probe costs against reading and hashing one row of the
 * table (docs/PERFORMANCE.md, "Cost independent of history").
 */
const PROBE_WHEN_TABLE_ROWS_PER_ROW = 8;

/** Reports this small are always probed for: a few thousand probes cost less than any scan. */
const ALWAYS_PROBE_BELOW = 10_000;

/**
 * Whether a statement that looks up the rows of `outer`, one of the run's own tables (the report, its
 * candidates; ANALYZEd once built), in `table` (`intents` or `partner_records`, which keep every earlier
 * day) should probe the table's index once per row (a LATERAL subquery that OFFSET 0 keeps whole, see
 * {@link probeOrJoin}) rather than let the planner join the two.
 *
 * Left to itself, PostgreSQL joins a report with millions of rows of history by hashing all of
 * them: by its cost model one seek per report row costs more than reading the whole table, and that is
 * what it ran, so the run's cost grew with the ledger's age (issue #15). Its
 * statistics are right; its model of a probe (a page from disk) is not, for the recent, cached rows a run
 * asks for, and a lower random_page_cost did not tip it. So the choice is made here, from sizes that
 * cannot lag far: the run table's as its ANALYZE counted it, and the ledger table's as VACUUM and ANALYZE
 * last did (`pg_class.reltuples`, the whole table, so a small partner on a large ledger is probed for too).
 * A probe per row costs in proportion to the report; a join is chosen only where the table is at most
 * {@link PROBE_WHEN_TABLE_ROWS_PER_ROW} times the run table, where it is the cheaper of the two (the first
 * reconciliation of a young ledger). Either way a run costs at most a constant times its report, whatever
 * the history.
 */
export async function probesTable(
  db: Queryable,
  table: 'intents' | 'partner_records',
  outer: string,
): Promise<boolean> {
  const result = await db.query<{ table_rows: number; outer_rows: number }>(
    `SELECT (SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = $1::regclass) AS table_rows,
            (SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = $2::regclass) AS outer_rows`,
    [table, outer],
  );
  const { table_rows: tableRows, outer_rows: outerRows } = result.rows[0]!;
  if (outerRows < ALWAYS_PROBE_BELOW) return true;
  return Number(tableRows) > PROBE_WHEN_TABLE_ROWS_PER_ROW * Number(outerRows);
}

/**
 * SQL: the rows `columns` of `table` that `condition` (which names the outer row) selects, as a FROM item
 * called `alias` that follows a run table in the FROM list: with `probe`, `CROSS JOIN LATERAL (SELECT ...
 * OFFSET 0)`, which PostgreSQL cannot flatten into a join and so runs as one index scan per outer row;
 * otherwise a plain `JOIN ... ON`, for the planner to join as it sees fit. The same rows either way. With
 * `left`, an outer row that selects none is kept once, with NULLs (`LEFT JOIN`).
 */
export function probeOrJoin(
  probe: boolean,
  table: string,
  alias: string,
  columns: readonly string[],
  condition: string,
  options: { left?: boolean } = {},
): string {
  const left = options.left === true;
  if (!probe) return `${left ? 'LEFT ' : ''}JOIN ${table} ${alias} ON ${condition}`;
  const selected = columns.map((column) => `${alias}.${column}`).join(', ');
  const lateral = `LATERAL (SELECT ${selected} FROM ${table} ${alias} WHERE ${condition} OFFSET 0) ${alias}`;
  return left ? `LEFT JOIN ${lateral} ON true` : `CROSS JOIN ${lateral}`;
}
