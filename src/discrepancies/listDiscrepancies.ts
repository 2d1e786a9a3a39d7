import type { Queryable } from '../database/queryable.js';
import { DiscrepancyQuery } from './discrepancyQuery.js';
import { type DiscrepancyRow, SUMMARY_COLUMNS, toSummary } from './discrepancyRow.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';

/** Page size when the filter gives none. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page `listDiscrepancies` returns; exports use {@link streamDiscrepancies}. */
export const MAX_PAGE_SIZE = 1000;

/**
 * One page of discrepancies matching `filter`, sorted (default: newest first) with the id as tie-breaker,
 * and how many match in all. `limit` is clamped to 0..1000 (default 50), `offset` to >= 0.
 */
export async function listDiscrepancies(
  db: Queryable,
  filter: DiscrepancyFilter = {},
): Promise<{ rows: DiscrepancySummary[]; total: number }> {
  const limit = clamp(filter.limit, DEFAULT_PAGE_SIZE, 0, MAX_PAGE_SIZE);
  const offset = clamp(filter.offset, 0, 0, Number.MAX_SAFE_INTEGER);
  const page = new DiscrepancyQuery(filter);
  const sql = `SELECT ${SUMMARY_COLUMNS} FROM discrepancies d ${page.where()} ${page.orderBy()}
    LIMIT ${page.param(limit)} OFFSET ${page.param(offset)}`;
  const [rows, total] = await Promise.all([
    db.query<DiscrepancyRow>(sql, page.values),
    countDiscrepancies(db, filter),
  ]);
  return { rows: rows.rows.map(toSummary), total };
}

/** How many discrepancies match `filter` (limit and offset ignored). */
export async function countDiscrepancies(db: Queryable, filter: DiscrepancyFilter = {}): Promise<number> {
  const query = new DiscrepancyQuery(filter);
  const result = await db.query<{ total: string }>(
    `SELECT count(*) AS total FROM discrepancies d ${query.where()}`,
    query.values,
  );
  return Number(result.rows[0].total);
}

function clamp(value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.min(max, Math.max(min, Math.trunc(value)));
}
