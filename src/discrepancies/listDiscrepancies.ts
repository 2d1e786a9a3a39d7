import type { Queryable } from '../database/queryable.js';
import { DiscrepancyQuery, type KeysetCursor, orderOf } from './discrepancyQuery.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';
import { selectKeysetPage } from './keysetPage.js';
import { encodePageCursor, readPageCursor } from './pageCursor.js';

/** Page size when the filter gives none. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page `listDiscrepancies` returns; exports use {@link streamDiscrepancies}. */
export const MAX_PAGE_SIZE = 1000;

/** A filter and the page of it to list: `limit`, and either `offset` or `after`. */
export interface DiscrepancyPageFilter extends DiscrepancyFilter {
  /**
   * A `next` cursor an earlier page of the same filter and sort returned: this page starts right after that
   * page's last row, exactly, however many rows changed, appeared or left the filter before it meanwhile.
   * Not with `offset`.
   */
  after?: string;
}

/** A page of discrepancies and where the list goes on. */
export interface DiscrepancyPage {
  rows: DiscrepancySummary[];
  /** How many match the filter in all, now (not only after the cursor). */
  total: number;
  /**
   * The cursor to pass as `after` for the rows following this page; null when no matching row follows (and
   * for `limit: 0`, which only counts).
   */
  next: string | null;
}

/**
 * One page of discrepancies matching `filter`, sorted (default: newest first) with the id as tie-breaker,
 * and how many match in all. `limit` is clamped to 0..1000 (default 50), `offset` to >= 0.
 *
 * To walk every row while people work through them, follow `next` with `after`: an offset counts rows
 * again on every page, so a row of an earlier page that left the filter (acknowledged, say) moves an unseen
 * one back past the offset (never listed), and one arriving before it (a newer discrepancy, newest first)
 * pushes a seen one onto the next page again. A malformed cursor, one of another sort or direction, or
 * `after` with `offset`, is a RangeError naming `after`.
 */
export async function listDiscrepancies(
  db: Queryable,
  filter: DiscrepancyPageFilter = {},
): Promise<DiscrepancyPage> {
  const limit = clamp(filter.limit, DEFAULT_PAGE_SIZE, 0, MAX_PAGE_SIZE);
  const offset = clamp(filter.offset, 0, 0, Number.MAX_SAFE_INTEGER);
  const order = orderOf(filter);
  let after: KeysetCursor | null = null;
  if (filter.after !== undefined) {
    if (filter.offset !== undefined) throw new RangeError('after and offset cannot be used together');
    const read = readPageCursor(filter.after, order);
    if ('problem' in read) throw new RangeError(read.problem);
    after = read.cursor;
  }
  // One row more than the page tells whether another page follows, without a count after the cursor.
  const [found, total] = await Promise.all([
    selectKeysetPage(db, filter, { after, limit: limit + 1, offset }),
    countDiscrepancies(db, filter),
  ]);
  const page = found.slice(0, limit);
  const next =
    found.length > limit && limit > 0 ? encodePageCursor(order, page[page.length - 1].cursor) : null;
  return { rows: page.map((entry) => entry.row), total, next };
}

/** How many discrepancies match `filter` (limit, offset and after ignored). */
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
