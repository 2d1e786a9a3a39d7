import type { Queryable } from '../../database/queryable.js';

/**
 * Deletes one batch of settled intents older than the window, never one that any discrepancy points at
 * (finance may still need it, and the foreign key would refuse anyway). Batches keep each transaction short
 * so purging a large backlog never blocks claims for long. Returns how many were deleted.
 */
export async function purgeSettledIntents(
  db: Queryable,
  olderThanMs: number,
  batchSize: number,
): Promise<number> {
  const result = await db.query(
    `DELETE FROM intents WHERE id IN (
       SELECT i.id FROM intents i
        WHERE i.settled_at < now() - $1 * interval '1 millisecond'
          AND i.status IN ('completed', 'rejected', 'not_executed')
          AND NOT EXISTS (SELECT 1 FROM discrepancies d WHERE d.intent_id = i.id)
        LIMIT $2
        FOR UPDATE SKIP LOCKED)`,
    [olderThanMs, batchSize],
  );
  return result.rowCount ?? 0;
}

/** Deletes one batch of inbox rows older than the window. */
export async function purgeInbox(db: Queryable, olderThanMs: number, batchSize: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM inbox WHERE ctid IN (
       SELECT ctid FROM inbox WHERE processed_at < now() - $1 * interval '1 millisecond' LIMIT $2)`,
    [olderThanMs, batchSize],
  );
  return result.rowCount ?? 0;
}

/**
 * How many rows a purge with this window would delete now, for a progress bar's total (the same conditions
 * as the two deletes above). Only an estimate of the work: rows settle and get disputed while a purge runs.
 * Both counts use the same indexes as the deletes (intents_settled_at, inbox_processed_at).
 */
export async function countPurgeable(
  db: Queryable,
  olderThanMs: number,
): Promise<{ intents: number; inbox: number }> {
  const result = await db.query<{ intents: string; inbox: string }>(
    `SELECT (SELECT count(*) FROM intents i
              WHERE i.settled_at < now() - $1 * interval '1 millisecond'
                AND i.status IN ('completed', 'rejected', 'not_executed')
                AND NOT EXISTS (SELECT 1 FROM discrepancies d WHERE d.intent_id = i.id)) AS intents,
            (SELECT count(*) FROM inbox WHERE processed_at < now() - $1 * interval '1 millisecond') AS inbox`,
    [olderThanMs],
  );
  const row = result.rows[0];
  return { intents: Number(row.intents), inbox: Number(row.inbox) };
}
