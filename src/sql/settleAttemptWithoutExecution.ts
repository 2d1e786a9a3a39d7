import type { Json } from '../types.js';
import type { Queryable } from './queryable.js';

/** The outcomes a caller may report for an attempt that did not (provably or possibly) execute. */
export type FailedOutcome = 'rejected' | 'not_executed' | 'unknown';

/**
 * Records a failed attempt: `rejected` and `not_executed` settle the intent, `unknown` parks it for the
 * reconciler. Fenced like completion: only the current attempt of an `in_progress` intent, so a stale worker
 * cannot overwrite a newer attempt or a reconciler's decision. Returns false when nothing was written.
 */
export async function settleAttemptWithoutExecution(
  db: Queryable,
  input: { intentId: string; attempt: number; outcome: FailedOutcome; reason: Json; by: string },
): Promise<boolean> {
  const result = await db.query(
    `WITH failed AS (
       UPDATE intents
          SET status = $3, reason = $4::jsonb, resolved_by = $5, updated_at = now(),
              lease_expires_at = CASE WHEN $3 = 'unknown' THEN lease_expires_at END,
              settled_at = CASE WHEN $3 = 'unknown' THEN NULL ELSE now() END
        WHERE id = $1 AND attempt = $2 AND status = 'in_progress'
        RETURNING id
     ), attempt AS (
       UPDATE intent_attempts SET outcome = $3, ended_at = now(), error = $4::jsonb
        WHERE intent_id = $1 AND attempt = $2 AND outcome IS NULL AND EXISTS (SELECT 1 FROM failed)
     )
     SELECT id FROM failed`,
    [input.intentId, input.attempt, input.outcome, JSON.stringify(input.reason), input.by],
  );
  return (result.rowCount ?? 0) > 0;
}
