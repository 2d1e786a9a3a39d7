import type { Queryable } from '../../database/queryable.js';

/**
 * Closes `partner`'s runs that are `running` but whose heartbeat (or start, for a run from before migration
 * 0008) is older than `abandonAfterMs`, as `abandoned`, and returns their ids. Their process is gone: a live
 * run refreshes `heartbeat_at` every `heartbeatMs` (see runHeartbeat.ts), and the threshold is several of
 * those. Nothing such a run did was applied (it works in one transaction, committed together with its
 * `succeeded` row), so the row is all there is to close. Ages are taken with the database's now(), never a
 * process clock. A run from before migration 0008 could have committed and died before closing its row:
 * its error says so when partner rows or discrepancies carry its id. One conditional UPDATE: two runs starting together close each stale run once between them;
 * a live run's own final UPDATE holds its row until it commits, and is then no longer `running`.
 */
export async function abandonStaleRuns(
  db: Queryable,
  partner: string,
  abandonAfterMs: number,
): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `UPDATE reconciliation_runs r
        SET status = 'abandoned', finished_at = now(),
            error = CASE
              WHEN r.heartbeat_at IS NULL
               AND (EXISTS (SELECT 1 FROM partner_records p WHERE p.run_id = r.id)
                    OR EXISTS (SELECT 1 FROM discrepancies d WHERE d.run_id = r.id))
              THEN 'abandoned: started before migration 0008 and never closed, but its changes were committed '
                   '(partner rows or discrepancies carry its id); its counts were not recorded'
              ELSE format('abandoned: no heartbeat since %s (more than %s s ago); the process running it died or '
                          'lost the database before committing, so nothing it did was applied',
                          to_char(coalesce(r.heartbeat_at, r.started_at) AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                          trim_scale(round($2::numeric / 1000, 3)))
            END
      WHERE r.partner = $1 AND r.status = 'running'
        AND coalesce(r.heartbeat_at, r.started_at) < now() - make_interval(secs => $2::numeric / 1000)
      RETURNING id`,
    [partner, abandonAfterMs],
  );
  return result.rows.map((row) => row.id);
}
