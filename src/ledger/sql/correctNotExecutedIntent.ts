import type { Queryable } from '../../database/queryable.js';
import type { Json } from '../../shared/types.js';

/**
 * The partner's success for the current attempt arrived after reconciliation had "proven" it not executed
 * (the partner showed it later than its settlement lag). Nothing has retried it yet, so the truth can still
 * win: the intent becomes `completed` with this answer, which stops the next delivery from charging again.
 * Fenced on (attempt, status = 'not_executed'): once a newer attempt is claimed, this changes nothing and
 * the caller only raises the discrepancy. The caller always raises `late_completion` beside it, so the
 * correction is never silent.
 */
export async function correctNotExecutedIntent(
  db: Queryable,
  input: { intentId: string; attempt: number; partnerReference: string | null; response: Json | null },
): Promise<boolean> {
  const result = await db.query(
    `UPDATE intents
        SET status = 'completed', partner_reference = $3, response = $4::jsonb, reason = NULL,
            settled_at = now(), updated_at = now(), resolved_by = 'caller:late'
      WHERE id = $1 AND attempt = $2 AND status = 'not_executed'`,
    [
      input.intentId,
      input.attempt,
      input.partnerReference,
      input.response === null ? null : JSON.stringify(input.response),
    ],
  );
  return (result.rowCount ?? 0) > 0;
}
