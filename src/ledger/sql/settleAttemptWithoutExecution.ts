import type { Queryable } from '../../database/queryable.js';
import type { Json } from '../../shared/types.js';

/** The outcomes a caller may report for an attempt that did not (provably or possibly) execute. */
export type FailedOutcome = 'rejected' | 'not_executed' | 'unknown';

/**
 * Records a failed attempt: `rejected` and `not_executed` settle the intent, `unknown` parks it for the
 * reconciler. Fenced like completion: only the current attempt of an `in_progress` intent, so a stale worker
 * cannot overwrite a newer attempt or a reconciler's decision. Returns false when nothing was written. The
 * attempt gets its row here, from what the intent row says of it (migration 0006); should it have one
 * already (written by a previous version still running), that row is completed instead.
 */
export async function settleAttemptWithoutExecution(
  db: Queryable,
  input: { intentId: string; attempt: number; outcome: FailedOutcome; reason: Json; by: string },
): Promise<boolean> {
  const result = await db.query(
    `WITH failed AS (
       UPDATE intents
          SET status = $3, reason = $4::jsonb, resolved_by = $5, updated_at = now(),
              settled_at = CASE WHEN $3 = 'unknown' THEN NULL ELSE now() END
        WHERE id = $1 AND attempt = $2 AND status = 'in_progress'
        RETURNING id, attempt, owner, attempt_started_at, lease_expires_at
     ), attempt AS (
       INSERT INTO intent_attempts AS a (intent_id, attempt, owner, started_at, lease_expires_at, ended_at, outcome, error)
       SELECT id, attempt, owner, attempt_started_at, lease_expires_at, now(), $3, $4::jsonb FROM failed
       ON CONFLICT (intent_id, attempt) DO UPDATE
          SET outcome = EXCLUDED.outcome, ended_at = EXCLUDED.ended_at, error = EXCLUDED.error
        WHERE a.outcome IS NULL
     )
     SELECT id FROM failed`,
    [input.intentId, input.attempt, input.outcome, JSON.stringify(input.reason), input.by],
  );
  return (result.rowCount ?? 0) > 0;
}
