import type { Queryable } from '../database/queryable.js';
import { isoUtc } from './sqlText.js';
import { stuckCondition } from './stuckCondition.js';

export interface Resolution {
  completed: number;
  notExecuted: number;
}

/**
 * Settles the stuck candidates the evidence decides, into `rec_resolved (intent_id, attempt, resolution)`:
 * - at least one execution of its current attempt on record -> `completed`, with the partner reference of
 *   the earliest one;
 * - none on record at all, and its absence is proven (see collectCandidates) -> `not_executed`, which the
 *   next claim retries.
 * An execution that is (or may be) an earlier attempt's (`rec_evidence.earlier`, src/reconcile/earlierAttempt.ts:
 * an intent claimed again whose first attempt the partner executed after all) decides neither: it is no
 * proof that the current attempt executed, and with it on record a proof that the current attempt did not
 * would make the next claim charge a second time. The intent stays stuck and flagDiscrepancies tells a person.
 * The current attempt row gets the same resolution, by whom and when (see {@link resolveAttempt}).
 *
 * The earliest execution of each stuck intent is read through rec_evidence's intent index, one probe per
 * stuck intent (a LATERAL ... LIMIT 1): stuck intents are a small share of a report's candidates, and a join
 * hashed them and read every evidence row of the report to keep theirs (docs/PERFORMANCE.md, "Staging and
 * deciding a report").
 *
 * Fenced: each UPDATE repeats the stuck condition and the attempt number in its WHERE. A caller's answer
 * committed after the candidates were read (or still uncommitted, holding the row) is seen by PostgreSQL
 * when it re-checks the row under READ COMMITTED, and the run leaves that intent alone. Conversely, a
 * caller answering after this UPDATE waits for the run's commit, then finds the intent settled and reports a
 * harmless repeat or a late_completion (invariant 4); nothing is overwritten either way.
 */
export async function resolveStuckIntents(
  db: Queryable,
  input: { partner: string; stuckAfterMs: number; resolvedBy: string; runId: string },
): Promise<Resolution> {
  await db.query(
    `CREATE TEMP TABLE rec_resolved (intent_id bigint PRIMARY KEY, attempt integer NOT NULL, resolution text NOT NULL)
     ON COMMIT DROP`,
  );
  const completed = await db.query(
    `WITH decided AS (
       SELECT c.intent_id, c.attempt, e.partner_reference
         FROM rec_intents c
        CROSS JOIN LATERAL (SELECT e.partner_reference FROM rec_evidence e
                             WHERE e.intent_id = c.intent_id AND NOT e.earlier
                             ORDER BY e.executed_at NULLS LAST, e.run_id, e.line, e.record_id
                             LIMIT 1) e
        WHERE c.role = 'stuck'
     ), done AS (
       UPDATE intents i
          SET status = 'completed', partner_reference = COALESCE(d.partner_reference, i.partner_reference),
              settled_at = now(), updated_at = now(), resolved_by = $3
         FROM decided d
        WHERE i.id = d.intent_id AND i.attempt = d.attempt AND i.partner = $1 AND ${stuckCondition('i', '$2')}
        RETURNING i.id, i.attempt, i.owner, i.attempt_started_at, i.lease_expires_at
     ), attempt AS (
       ${resolveAttempt('completed')}
     )
     INSERT INTO rec_resolved (intent_id, attempt, resolution) SELECT id, attempt, 'completed' FROM done`,
    [input.partner, input.stuckAfterMs, input.resolvedBy],
  );
  const notExecuted = await db.query(
    `WITH decided AS (
       SELECT c.intent_id, c.attempt, c.started_at
         FROM rec_intents c
        WHERE c.role = 'stuck' AND c.absence_proves
          AND NOT EXISTS (SELECT 1 FROM rec_evidence e WHERE e.intent_id = c.intent_id)
     ), done AS (
       UPDATE intents i
          SET status = 'not_executed', settled_at = now(), updated_at = now(), resolved_by = $3,
              reason = jsonb_build_object(
                'detail', 'absent from the partner report of reconciliation run ' || $4::text ||
                          ', which covers attempt ' || d.attempt || ' started at ' || ${isoUtc('d.started_at')},
                'runId', $4::text)
         FROM decided d
        WHERE i.id = d.intent_id AND i.attempt = d.attempt AND i.partner = $1 AND ${stuckCondition('i', '$2')}
        RETURNING i.id, i.attempt, i.owner, i.attempt_started_at, i.lease_expires_at
     ), attempt AS (
       ${resolveAttempt('not_executed')}
     )
     INSERT INTO rec_resolved (intent_id, attempt, resolution) SELECT id, attempt, 'not_executed' FROM done`,
    [input.partner, input.stuckAfterMs, input.resolvedBy, input.runId],
  );
  // Read by flagOrphans to leave out the intents this run completed: with statistics, as every run table.
  await db.query('ANALYZE rec_resolved');
  return { completed: completed.rowCount ?? 0, notExecuted: notExecuted.rowCount ?? 0 };
}

/**
 * SQL (a CTE body over `done`, the intents just resolved, by `$3`): the resolved attempt's row gets the
 * resolution. An attempt the caller reported `unknown` has its row already; one whose worker died mid-call
 * is described by the intent row alone (migration 0006) and gets its row here, without an outcome, since
 * the caller never reported one.
 */
function resolveAttempt(resolution: 'completed' | 'not_executed'): string {
  return `INSERT INTO intent_attempts AS a (intent_id, attempt, owner, started_at, lease_expires_at, resolution,
                                           resolved_by, resolved_at)
       SELECT id, attempt, owner, attempt_started_at, lease_expires_at, '${resolution}', $3, now() FROM done
       ON CONFLICT (intent_id, attempt) DO UPDATE
          SET resolution = EXCLUDED.resolution, resolved_by = EXCLUDED.resolved_by, resolved_at = EXCLUDED.resolved_at`;
}
