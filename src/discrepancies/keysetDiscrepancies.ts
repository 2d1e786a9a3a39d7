import type { Queryable } from '../database/queryable.js';
import type { KeysetCursor } from './discrepancyQuery.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';
import { selectKeysetPage } from './keysetPage.js';
import { STREAM_BATCH_SIZE } from './streamDiscrepancies.js';

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
    const offset = cursor ? 0 : Math.max(0, Math.trunc(filter.offset ?? 0));
    const batch = await selectKeysetPage(db, filter, { after: cursor, limit: size, offset });
    for (const { row } of batch) yield row;
    if (batch.length < size) return;
    remaining -= batch.length;
    cursor = batch[batch.length - 1].cursor;
  }
}
