import type { Queryable } from '../database/queryable.js';

/**
 * A row of this report matched to an intent we hold as `not_executed` (a report proved it absent, or its
 * caller reported `PartnerNotExecuted`), while that settled attempt is still its current one: the partner's
 * report now shows the execution the settlement denied. Left `not_executed`, the next delivery claims the
 * next attempt and charges a second time although an execution is on record. So the truth wins while it
 * still can, as for a caller's late success (invariant 4, src/ledger/sql/correctNotExecutedIntent.ts): the
 * intent becomes `completed` with the row's partner reference (the earliest such row's, as
 * resolveStuckIntents completes a stuck intent), its attempt row says so, and flagLateExecutions raises a
 * `late_completion` for a person (the settlement was wrong: was a retry charged elsewhere?). Never silent.
 *
 * A row is that attempt's execution only if it could be: executed no earlier than the attempt's start minus
 * `clockSkew` (the partner's clock may be behind ours), the bound matchRows uses against an intent's
 * creation, and no later than its start plus `settlementLag` and `clockSkew`, the window a proof of absence
 * looks at. Earlier, it is an earlier attempt's execution; later, another execution of the same reference
 * (Twilio's reference is the recipient: a message to the same number days later): the intent stays as it
 * is, and the row is an orphan for a person. Only rows of a report trusted to name intents correct anything
 * (`trusted`, decided by runOnce: matched by reference or partner reference, not by amount and time; the
 * account checked where the source states one; a plausible report).
 * A row without a time could be any attempt's: it is taken as the current one's only on attempt 1, when
 * there is no other.
 *
 * Fenced like correctNotExecutedIntent, on the attempt number and `status = 'not_executed'` in the UPDATE
 * itself. An intent claimed again meanwhile (its attempt moved on, or a claim committing while this runs,
 * which PostgreSQL re-checks under READ COMMITTED) is left alone: its row is an earlier attempt's
 * execution and no evidence about the new one (src/reconcile/earlierAttempt.ts), an `orphan_partner_record`
 * naming the earlier attempt whatever the new attempt's state (flagOrphans while it is in flight or settled
 * otherwise, flagEarlierExecutions once it is stuck or completed), and a `duplicate_execution` once the new
 * attempt's own execution is on record too. A claim that comes after this UPDATE waits for the run's commit
 * and then finds the intent completed: it replays.
 *
 * `rejected` intents are never touched here: the partner said no, and a report showing the execution of
 * one is a different problem (a refusal that was not one), left an `orphan_partner_record` for a person.
 *
 * Corrected intents join `rec_intents` as settled candidates, so their rows become evidence like any
 * completed intent's: a second execution on record is a `duplicate_execution`, a differing figure an
 * `amount_mismatch`; their row is taken as the corrected attempt's (no `earlier_until`), since that is what
 * correcting decided. Records what it corrected into `rec_corrected`, with how the intent had been settled.
 * Runs before the evidence is collected (see applyReport). Returns how many intents it corrected.
 *
 * The rows probed are only those matched to an intent that was not completed when matched (as in
 * flagOrphans), each intent read by primary key in a LATERAL subquery that OFFSET 0 keeps whole. The
 * UPDATE reads the intents it corrects by primary key too, from the list of those that fit
 * (`= ANY (ARRAY(...))`): joined to them the ordinary way, PostgreSQL took the intents' statistics (no
 * `not_executed` intent in them yet, or a handful) and the estimate of the rows that fit (thousands, where
 * there are usually none), and read every intent of every partner for `status = 'not_executed'` on each
 * run with a large report (docs/PERFORMANCE.md, "The stuck candidates apart").
 */
export async function correctLateExecutions(
  db: Queryable,
  input: {
    partner: string;
    clockSkewMs: number;
    settlementLagMs: number;
    resolvedBy: string;
    trusted: boolean;
  },
): Promise<number> {
  await db.query(
    `CREATE TEMP TABLE rec_corrected (
       intent_id bigint PRIMARY KEY, attempt integer NOT NULL, line integer NOT NULL,
       settled_by text, settled_at timestamptz, settled_reason jsonb
     ) ON COMMIT DROP`,
  );
  // Not trusted (runOnce): matched by amount and time alone, an unchecked account, an implausible report.
  // Its rows stay what they were before (an orphan), and a person decides.
  if (!input.trusted) return 0;
  const corrected = await db.query(
    `WITH fitting AS (
       SELECT DISTINCT ON (r.intent_id) r.intent_id, i.attempt, r.line, r.partner_reference,
              i.resolved_by, i.settled_at, i.reason
         FROM (SELECT r.* FROM rec_report r
                WHERE r.intent_id IS NOT NULL AND r.intent_completed IS NOT TRUE
               OFFSET 0) r
        CROSS JOIN LATERAL (SELECT i.attempt, i.status, i.attempt_started_at, i.resolved_by, i.settled_at, i.reason
                              FROM intents i WHERE i.id = r.intent_id AND i.partner = $1 OFFSET 0) i
        WHERE i.status = 'not_executed'
          AND ((r.executed_at >= i.attempt_started_at - $2 * interval '1 millisecond'
                AND r.executed_at <= i.attempt_started_at + ($4 + $2) * interval '1 millisecond')
               OR (r.executed_at IS NULL AND i.attempt = 1))
        ORDER BY r.intent_id, r.executed_at NULLS LAST, r.line
     ), done AS (
       UPDATE intents i
          SET status = 'completed', partner_reference = COALESCE(f.partner_reference, i.partner_reference),
              reason = NULL, settled_at = now(), updated_at = now(), resolved_by = $3
         FROM fitting f
        WHERE i.id = ANY (ARRAY(SELECT intent_id FROM fitting))
          AND i.id = f.intent_id AND i.attempt = f.attempt AND i.status = 'not_executed'
        RETURNING i.id, i.attempt, i.owner, i.attempt_started_at, i.lease_expires_at
     ), attempt AS (
       INSERT INTO intent_attempts AS a (intent_id, attempt, owner, started_at, lease_expires_at, resolution,
                                         resolved_by, resolved_at)
       SELECT id, attempt, owner, attempt_started_at, lease_expires_at, 'completed', $3, now() FROM done
       ON CONFLICT (intent_id, attempt) DO UPDATE
          SET resolution = EXCLUDED.resolution, resolved_by = EXCLUDED.resolved_by, resolved_at = EXCLUDED.resolved_at
     )
     INSERT INTO rec_corrected (intent_id, attempt, line, settled_by, settled_at, settled_reason)
     SELECT f.intent_id, f.attempt, f.line, f.resolved_by, f.settled_at, f.reason
       FROM done d JOIN fitting f ON f.intent_id = d.id`,
    [input.partner, input.clockSkewMs, input.resolvedBy, input.settlementLagMs],
  );
  const count = corrected.rowCount ?? 0;
  // Empty, any plan that reads it is instant; otherwise the flag statements join it, with statistics.
  if (count === 0) return 0;
  await db.query('ANALYZE rec_corrected');
  await db.query(
    `INSERT INTO rec_intents (intent_id, attempt, role, status, reference, partner_reference, amount, currency,
                              created_at, started_at, visible_by, absence_proves, past_deadline)
     SELECT i.id, i.attempt, 'settled', i.status, i.reference, i.partner_reference, i.amount, i.currency,
            i.created_at, i.attempt_started_at, i.attempt_started_at + $1 * interval '1 millisecond', false, false
       FROM rec_corrected c JOIN intents i ON i.id = c.intent_id`,
    [input.settlementLagMs],
  );
  await db.query('ANALYZE rec_intents');
  return count;
}
