import type { Queryable } from '../database/queryable.js';
import { type ReconcilerDiscrepancyKind, zeroDiscrepancies } from './reconciliationResult.js';

/**
 * Raises every flag in `rec_flags` as a discrepancy of run `runId`, with its first history entry (`open`,
 * by `actor`), in one statement. A dedupe key already taken (by an earlier run, or twice in this one) adds
 * nothing: that is why re-running a report flags nothing new. Rows go in dedupe-key order so two runs racing
 * on the same keys take their locks in the same order. Returns the NEW discrepancies by kind.
 */
export async function raiseFlags(
  db: Queryable,
  input: { partner: string; runId: string; actor: string },
): Promise<Record<ReconcilerDiscrepancyKind, number>> {
  const result = await db.query<{ kind: ReconcilerDiscrepancyKind; n: number }>(
    `WITH raised AS (
       INSERT INTO discrepancies (kind, partner, intent_id, attempt, run_id, reference, partner_reference,
                                  amount_at_risk, currency, summary, details, dedupe_key, partner_record_ids)
       SELECT kind, $1, intent_id, attempt, $2, reference, partner_reference, amount_at_risk, currency, summary,
              details, dedupe_key, partner_record_ids
         FROM (SELECT DISTINCT ON (dedupe_key) * FROM rec_flags ORDER BY dedupe_key) f
        ORDER BY dedupe_key
       ON CONFLICT ON CONSTRAINT discrepancies_dedupe_key_unique DO NOTHING
       RETURNING id, kind, summary
     ), history AS (
       INSERT INTO discrepancy_history (discrepancy_id, from_status, to_status, actor, note)
       SELECT id, NULL, 'open', $3, summary FROM raised
     )
     SELECT kind, count(*)::int AS n FROM raised GROUP BY kind`,
    [input.partner, input.runId, input.actor],
  );
  const counts = zeroDiscrepancies();
  for (const row of result.rows) counts[row.kind] = row.n;
  return counts;
}
