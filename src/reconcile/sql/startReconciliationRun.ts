import type { Queryable } from '../../database/queryable.js';

export interface NewReconciliationRun {
  partner: string;
  trigger: 'schedule' | 'manual';
  /** The cron slot of a scheduled run; null for manual runs (and for the later files of a scheduled glob). */
  slot: Date | null;
  source: string;
  owner: string | null;
}

/**
 * Records a run as `running` before any work, in its own statement (committed at once), so a run that
 * fails or is killed is still on record. For a scheduled run this is also the election: `UNIQUE (partner,
 * slot)` lets exactly one worker insert the slot (truncated to the second, as the worker's slot claim does,
 * so millisecond jitter between machines elects nothing twice); the others get null and skip. Its first
 * heartbeat is its start (see migration 0008).
 */
export async function startReconciliationRun(
  db: Queryable,
  run: NewReconciliationRun,
): Promise<string | null> {
  const result = await db.query<{ id: string }>(
    `INSERT INTO reconciliation_runs (partner, slot, trigger, source, status, owner, heartbeat_at)
     VALUES ($1, date_trunc('second', $2::timestamptz), $3, $4, 'running', $5, now())
     ON CONFLICT ON CONSTRAINT reconciliation_runs_slot_unique DO NOTHING
     RETURNING id`,
    [run.partner, run.slot?.toISOString() ?? null, run.trigger, run.source, run.owner],
  );
  return result.rows[0]?.id ?? null;
}
