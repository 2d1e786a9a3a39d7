import type { Queryable } from '../database/queryable.js';
import { DiscrepancyQuery, type KeysetCursor } from './discrepancyQuery.js';
import { type DiscrepancyRow, SUMMARY_COLUMNS, toSummary } from './discrepancyRow.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';
import { STREAM_BATCH_SIZE } from './streamDiscrepancies.js';

type CursorRow = DiscrepancyRow & { cursor_value: string | null };

/**
 * Every discrepancy matching `filter`, in the same order as `listDiscrepancies`, fetched in batches of
 * `batchSize` by keyset pagination (each batch starts after the sort value and id of the previous one's
 * last row). Works on any {@link Queryable} and holds no connection or transaction between batches; rows
 * inserted meanwhile never shift or repeat a page. `limit` caps the rows yielded; `offset` skips rows
 * before the first one.
 *
 * Each batch is its own sorted query: cheap for a filtered set, but with no index on the sort key every
 * batch re-sorts the matching rows. For exports of many rows prefer {@link streamDiscrepancies} (one
 * server-side cursor, one sort).
 */
export async function* streamDiscrepanciesKeyset(
  db: Queryable,
  filter: DiscrepancyFilter = {},
  options: { batchSize?: number } = {},
): AsyncGenerator<DiscrepancySummary, void, undefined> {
  const batchSize = Math.max(1, Math.trunc(options.batchSize ?? STREAM_BATCH_SIZE));
  let remaining =
    filter.limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.trunc(filter.limit));
  let cursor: KeysetCursor | null = null;
  while (remaining > 0) {
    const size = Math.min(batchSize, remaining);
    const query = new DiscrepancyQuery(filter);
    const where = query.where(cursor ? [query.after(cursor)] : []);
    const offset: number = cursor ? 0 : Math.max(0, Math.trunc(filter.offset ?? 0));
    const result: { rows: CursorRow[] } = await db.query<CursorRow>(
      `SELECT ${SUMMARY_COLUMNS}, ${query.sort.cursor} AS cursor_value
         FROM discrepancies d ${where} ${query.orderBy()}
        LIMIT ${query.param(size)} OFFSET ${query.param(offset)}`,
      query.values,
    );
    for (const row of result.rows) yield toSummary(row);
    if (result.rows.length < size) return;
    remaining -= result.rows.length;
    const last: CursorRow = result.rows[result.rows.length - 1];
    cursor = { value: last.cursor_value, id: last.id };
  }
}
