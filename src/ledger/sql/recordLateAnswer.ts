import type { Queryable } from '../../database/queryable.js';
import type { Json } from '../../shared/types.js';

/**
 * Keeps a late partner answer in the attempt's own history. The intent itself is NOT changed: something
 * else (the reconciler, a newer attempt) already settled it, and overwriting that silently is exactly what
 * invariant 4 forbids. The caller raises a `late_completion` discrepancy beside this.
 */
export async function recordLateAnswer(
  db: Queryable,
  input: { intentId: string; attempt: number; partnerReference: string | null; response: Json | null },
): Promise<void> {
  await db.query(
    `UPDATE intent_attempts
        SET outcome = 'completed', ended_at = coalesce(ended_at, now()), partner_reference = $3, response = $4::jsonb
      WHERE intent_id = $1 AND attempt = $2 AND (outcome IS NULL OR outcome = 'unknown')`,
    [
      input.intentId,
      input.attempt,
      input.partnerReference,
      input.response === null ? null : JSON.stringify(input.response),
    ],
  );
}
