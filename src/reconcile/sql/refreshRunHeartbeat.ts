import type { Queryable } from '../../database/queryable.js';

/**
 * Says run `runId` is alive: `heartbeat_at = now()`, only while it is `running`. Returns false when the run
 * is no longer running (finished, or closed as `abandoned` by another process that found it stale).
 */
export async function refreshRunHeartbeat(db: Queryable, runId: string): Promise<boolean> {
  const result = await db.query(
    `UPDATE reconciliation_runs SET heartbeat_at = now() WHERE id = $1 AND status = 'running'`,
    [runId],
  );
  return result.rowCount === 1;
}
