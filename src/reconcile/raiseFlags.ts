import type { Queryable } from '../database/queryable.js';
import type { DiscrepancyKind } from '../shared/status.js';
import { zeroDiscrepancies } from './reconciliationResult.js';
import { holdRun } from './sql/holdRun.js';

/**
 * Raises every flag in `rec_flags` as a discrepancy of run `runId`, with its first history entry (`open`,
 * by `actor`), in one statement. A dedupe key already taken (by an earlier run, or twice in this one) adds
 * nothing: that is why re-running a report flags nothing new. Rows go in dedupe-key order so two runs racing
 * on the same keys take their locks in the same order. Returns the NEW discrepancies by kind.
 *
 * No foreign key checks each row (migration 0020): every intent flagged is one of the run's partner, whose
 * reconciliation lock the run holds, and deleting intents takes that lock before it refuses to delete one
 * a discrepancy names (`intents_keep_discrepancies`).
 */
export async function raiseFlags(
  db: Queryable,
  input: { partner: string; runId: string; actor: string },
): Promise<Record<DiscrepancyKind, number>> {
  // The run row once, for every discrepancy naming it (migration 0020: no foreign key checks each).
  await holdRun(db, input.runId);
  await followDuplicates(db, input.actor);
  const result = await db.query<{ kind: DiscrepancyKind; n: number }>(
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

/** SQL: executions recorded in a duplicate_execution's details (discrepancy or flag `alias`). */
const executions = (alias: string) => `COALESCE((${alias}.details->>'executions')::int, 0)`;

/**
 * Duplicates keep up with the partner: a report showing a third execution of an intent whose duplicate is
 * still open (or acknowledged) updates that discrepancy (amount at risk, summary, rows) and says so in its
 * history, keeping its status; if the intent's duplicates were all settled (resolved or dismissed), the new
 * execution opens a new one (its dedupe key carries the count, so a re-run raises it once). A flag that adds
 * no execution to what a discrepancy already shows is dropped here or, as before, by its dedupe key. A
 * four-eyes proposal waiting on a duplicate that grows is withdrawn, with a history row: it was made on the
 * smaller amount (migration 0018), and the approval would otherwise apply it to executions nobody judged.
 */
async function followDuplicates(db: Queryable, actor: string): Promise<void> {
  await db.query(
    `WITH grown AS (
       UPDATE discrepancies d
          SET amount_at_risk = f.amount_at_risk, summary = f.summary, details = f.details,
              partner_record_ids = f.partner_record_ids, updated_at = now()
         FROM rec_flags f
        WHERE f.kind = 'duplicate_execution' AND d.kind = 'duplicate_execution' AND d.intent_id = f.intent_id
          AND d.status IN ('open', 'acknowledged') AND ${executions('d')} < ${executions('f')}
        RETURNING d.id, d.status, f.summary, d.amount_at_risk, d.currency
     ), withdrawn AS (
       DELETE FROM discrepancy_proposals p USING grown g WHERE p.discrepancy_id = g.id
       RETURNING p.discrepancy_id, p.action, p.proposed_by, p.amount_at_risk
     )
     INSERT INTO discrepancy_history (discrepancy_id, from_status, to_status, actor, note)
     SELECT id, status, status, $1, 'The partner reports a further execution. ' || summary FROM grown
     UNION ALL
     SELECT g.id, g.status, g.status, $1,
            format('%s''s proposal to %s, made on %s %s at risk, is withdrawn: the amount at risk is now %s %s; '
                   'propose again', w.proposed_by, w.action, coalesce(w.amount_at_risk::text, 'an unknown amount'),
                   coalesce(g.currency, ''), g.amount_at_risk, coalesce(g.currency, ''))
       FROM withdrawn w JOIN grown g ON g.id = w.discrepancy_id`,
    [actor],
  );
  await db.query(
    `DELETE FROM rec_flags f
      WHERE f.kind = 'duplicate_execution'
        AND EXISTS (SELECT 1 FROM discrepancies d
                     WHERE d.kind = 'duplicate_execution' AND d.intent_id = f.intent_id
                       AND d.status IN ('open', 'acknowledged'))`,
  );
  await db.query(
    `UPDATE rec_flags f SET dedupe_key = f.dedupe_key || ':' || ${executions('f')}
      WHERE f.kind = 'duplicate_execution'
        AND EXISTS (SELECT 1 FROM discrepancies d
                     WHERE d.kind = 'duplicate_execution' AND d.intent_id = f.intent_id)
        AND ${executions('f')} > (SELECT max(${executions('d')}) FROM discrepancies d
                                  WHERE d.kind = 'duplicate_execution' AND d.intent_id = f.intent_id)`,
  );
}
