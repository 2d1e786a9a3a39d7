import type { Queryable } from '../database/queryable.js';
import { DiscrepancyQuery, type KeysetCursor } from './discrepancyQuery.js';
import { type DiscrepancyRow, SUMMARY_COLUMNS, toSummary } from './discrepancyRow.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';

type CursorRow = DiscrepancyRow & { cursor_value: string | null };

/** A listed row and the keyset position just after it. */
export interface PositionedRow {
  row: DiscrepancySummary;
  cursor: KeysetCursor;
}

/**
 * Up to `limit` rows matching `filter` in list order, starting after `after` when given (exact: rows
 * inserted or changed before it never shift the page), else after skipping `offset` rows. Each comes with
 * its cursor, its sort value written as text that casts back exactly. `filter.limit` and `filter.offset` are
 * not read: the caller passes the page it wants.
 */
export async function selectKeysetPage(
  db: Queryable,
  filter: DiscrepancyFilter,
  page: { after: KeysetCursor | null; limit: number; offset: number },
): Promise<PositionedRow[]> {
  const query = new DiscrepancyQuery(filter);
  const where = query.where(page.after ? [query.after(page.after)] : []);
  const result = await db.query<CursorRow>(
    `SELECT ${SUMMARY_COLUMNS}, ${query.sort.cursor} AS cursor_value
       FROM discrepancies d ${where} ${query.orderBy()}
      LIMIT ${query.param(page.limit)} OFFSET ${query.param(page.offset)}`,
    query.values,
  );
  return result.rows.map((row) => ({ row: toSummary(row), cursor: { value: row.cursor_value, id: row.id } }));
}
