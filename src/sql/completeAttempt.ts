import type { Json } from '../types.js';
import type { PreparedQueryable } from './queryable.js';

export interface CompletedRow {
  id: string;
  attempt: number;
  partner_reference: string | null;
  response: Json | null;
}

/**
 * Records that the partner executed attempt `attempt`, in one statement (intent + attempt row).
 *
 * Fencing: the intent must still be on this attempt and unsettled (`in_progress`, or `unknown` when an
 * answer arrives after the caller gave up waiting: a late truth settles it). For a partner that honours our
 * key, an older attempt's answer is the same execution and is accepted too. Anything else returns no row and
 * the caller decides whether it is a harmless repeat or a late completion (invariant 4).
 */
export async function completeAttempt(
  db: PreparedQueryable,
  input: {
    intentId: string;
    attempt: number;
    partnerReference: string | null;
    response: Json | null;
    by: string;
  },
): Promise<CompletedRow | undefined> {
  const result = await db.query<CompletedRow>({
    name: 'intent_ledger_complete',
    text: `WITH done AS (
       UPDATE intents
          SET status = 'completed', partner_reference = $3, response = $4::jsonb, lease_expires_at = NULL,
              settled_at = now(), updated_at = now(), resolved_by = $5
        WHERE id = $1 AND status IN ('in_progress', 'unknown')
          AND (attempt = $2 OR (partner_honours_key AND attempt > $2))
        RETURNING id, attempt, partner_reference, response
     ), attempt AS (
       UPDATE intent_attempts
          SET outcome = 'completed', ended_at = now(), partner_reference = $3, response = $4::jsonb
        WHERE intent_id = $1 AND attempt = $2 AND (outcome IS NULL OR outcome = 'unknown')
          AND EXISTS (SELECT 1 FROM done)
     )
     SELECT * FROM done`,
    values: [
      input.intentId,
      input.attempt,
      input.partnerReference,
      input.response === null ? null : JSON.stringify(input.response),
      input.by,
    ],
  });
  return result.rows[0];
}
