import type { Pool } from 'pg';
import { DiscrepancyQuery } from './discrepancyQuery.js';
import { type DiscrepancyRow, SUMMARY_COLUMNS, toSummary } from './discrepancyRow.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';

export const STREAM_BATCH_SIZE = 1000;

/**
 * Every discrepancy matching `filter`, in the same order as `listDiscrepancies`, for exports of any size:
 * one server-side cursor (`DECLARE ... NO SCROLL CURSOR` in a read-only transaction on a client of its own)
 * read with `FETCH batchSize`, so PostgreSQL sorts once, the process holds one batch at a time however
 * many rows match, and the export is one consistent snapshot. `limit` caps the rows, `offset` skips some.
 *
 * The client is released when the generator finishes, fails, or is abandoned (`break`, `return()`, a
 * destroyed stream). Holds a connection and a snapshot for the whole export; for a paged read that holds
 * nothing between batches see `streamDiscrepanciesKeyset`.
 */
export async function* streamDiscrepancies(
  pool: Pick<Pool, 'connect'>,
  filter: DiscrepancyFilter = {},
  options: { batchSize?: number } = {},
): AsyncGenerator<DiscrepancySummary, void, undefined> {
  const batchSize = Math.max(1, Math.trunc(options.batchSize ?? STREAM_BATCH_SIZE));
  const query = new DiscrepancyQuery(filter);
  let text = `SELECT ${SUMMARY_COLUMNS} FROM discrepancies d ${query.where()} ${query.orderBy()}`;
  if (filter.limit !== undefined) text += ` LIMIT ${query.param(Math.max(0, Math.trunc(filter.limit)))}`;
  if (filter.offset) text += ` OFFSET ${query.param(Math.max(0, Math.trunc(filter.offset)))}`;

  const client = await pool.connect();
  let done = false;
  let broken: Error | undefined;
  try {
    await client.query('BEGIN READ ONLY');
    await client.query(`DECLARE discrepancy_export NO SCROLL CURSOR FOR ${text}`, query.values);
    for (;;) {
      const batch = await client.query<DiscrepancyRow>(`FETCH ${batchSize} FROM discrepancy_export`);
      for (const row of batch.rows) yield toSummary(row);
      if (batch.rows.length < batchSize) break;
    }
    await client.query('COMMIT');
    done = true;
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    if (!done && !broken) {
      // Abandoned by the consumer: end the transaction (and the cursor with it) before handing the client back.
      await client.query('ROLLBACK').catch((error: Error) => {
        broken = error;
      });
    }
    // A client whose statement failed may be mid-transaction or cut off: destroy it rather than pool it.
    client.release(broken);
  }
}
