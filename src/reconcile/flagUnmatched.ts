import type { Queryable } from '../database/queryable.js';
import type { Coverage } from './coverage.js';
import { earlierAttemptSentence, earlierUntil, fromEarlierAttempt } from './earlierAttempt.js';
import { earlierJson, INTENT_JSON, INTENT_NAME, notableCandidates } from './flagSql.js';
import { isoUtc, money } from './sqlText.js';
import { stuckCondition } from './stuckCondition.js';

// What one side has and the other lacks: intents the partner does not show (missing_at_partner), rows no
// intent of ours accounts for (orphans, ambiguous rows), and stuck intents nobody can settle (unresolved).
// Each kind is one INSERT into `rec_flags` (see flagDiscrepancies.ts).

/**
 * Completed on our side, inside the coverage, and the partner has no execution of it: among the candidates
 * `rec_notable` kept, those with no execution on record (collectNewEvidence counted every candidate's).
 */
export async function flagMissing(db: Queryable, coverage: Coverage): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'missing_at_partner', c.intent_id, c.attempt, c.reference, c.partner_reference, c.amount, c.currency,
            'We recorded ' || ${INTENT_NAME} || ' as completed for ' || ${money('c.amount', 'c.currency')} ||
              ', but the partner report covering ' || ${isoUtc('$1::timestamptz')} || ' to ' ||
              ${isoUtc('$2::timestamptz')} || ' does not show it.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'partnerReference', c.partner_reference,
                               'coverage', jsonb_build_object('from', ${isoUtc('$1::timestamptz')},
                                                              'to', ${isoUtc('$2::timestamptz')})),
            'missing_at_partner:' || c.intent_id,
            '{}'::bigint[]
       FROM ${notableCandidates('n.executions = 0')}
      WHERE c.role = 'settled' AND c.absence_proves`,
    [coverage.from, coverage.to],
  );
}

/**
 * Rows of this report that match no intent, or match one we believe did not happen (rejected or
 * not_executed: the partner executed something we would retry or have refused). A not_executed intent whose
 * settled attempt this row could be the execution of was corrected to completed before (correctLateExecutions)
 * and is no orphan; what is left is a row of an earlier attempt, of an intent claimed again since, or of a
 * rejected one. Also the rows that are (or may be) an earlier attempt's execution of an intent whose new
 * attempt is in flight (`in_progress` with its lease running, or `unknown` and not stuck yet: no candidate
 * of this run, src/reconcile/earlierAttempt.ts): attempt 1 executed while attempt 2 is under way, so a
 * second charge is likely and a person must know now, not once attempt 2 is settled. The summary then names
 * the earlier attempt; the dedupe key is the row's, as for every orphan, so the same row flagged again once
 * attempt 2 is stuck, completed or settled otherwise (here or by flagEarlierExecutions) raises nothing new.
 * Stuck and completed intents are candidates, and flagEarlierExecutions judges their rows. Each row's record
 * is the one an earlier run had (`rec_known`) or else the one this run stored under the row's `record_id`.
 *
 * The orphan rows are found first, with their intent, into a table of their own that PostgreSQL then
 * knows the size of, and only they are joined to their records. As one statement, it read every report row
 * with its match and intent, and the records by identity in partner_records, which has no statistics yet
 * for the rows just stored, and took seconds for a few orphans (docs/PERFORMANCE.md, "Staging and deciding
 * a report").
 *
 * A matched row's intent is read by primary key from the report side, one index probe per row that could
 * be an orphan, in a LATERAL subquery that OFFSET 0 keeps PostgreSQL from flattening into a join (and
 * the rows to probe are chosen first, in a subquery kept whole the same way). Joined
 * the ordinary way, the planner chose its plan from statistics that cannot know what this very run just
 * did: it marked thousands of intents `not_executed` a moment ago, the statistics of `intents` (millions
 * of rows of history) still said there were none, and the planner started from those intents and scanned
 * the report once for each of them, a nested loop that took most of a run (issue #15; docs/PERFORMANCE.md,
 * "Cost independent of history"). The rows probed are only those whose intent was not completed when the
 * row was matched (`rec_report.intent_completed`; `completed` is final) nor completed by this run
 * (`rec_resolved`): both are known not to be rejected or not executed, and leaving them out is what keeps
 * the probes few. The first is a column of the row, not an anti join with the settled candidates: that
 * hashed every candidate of the report, most of this statement's time on a large one (docs/PERFORMANCE.md,
 * "Fewer passes over every row"). A matched completed intent is always a settled candidate, so the rows
 * left out are the same. Every table this
 * reads besides `intents` is one of the run's own, ANALYZEd when it was built.
 * Statuses of the other matched intents are read again: a caller may have settled one meanwhile.
 */
export async function flagOrphans(
  db: Queryable,
  input: { partner: string; source: string; settlementLagMs: number; clockSkewMs: number },
): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_orphans ON COMMIT DROP AS
     SELECT r.*, NULL::integer AS intent_attempt, NULL::text AS intent_status, NULL::text AS intent_reference,
            NULL::numeric AS intent_amount, NULL::text AS intent_currency,
            NULL::timestamptz AS intent_started_at, NULL::timestamptz AS earlier_until, false AS earlier
       FROM rec_report r
      WHERE r.intent_id IS NULL
        AND NOT EXISTS (SELECT 1 FROM rec_ambiguous a WHERE a.line = r.line)
     UNION ALL
     SELECT r.*, i.attempt, i.status, i.reference, i.amount, i.currency, i.attempt_started_at, i.earlier_until,
            ${fromEarlierAttempt('r.executed_at', 'i.earlier_until')}
       FROM (SELECT r.* FROM rec_report r
              WHERE r.intent_id IS NOT NULL AND r.intent_completed IS NOT TRUE
                AND NOT EXISTS (SELECT 1 FROM rec_resolved s
                                 WHERE s.intent_id = r.intent_id AND s.resolution = 'completed')
             OFFSET 0) r
      CROSS JOIN LATERAL (SELECT i.attempt, i.status, i.reference, i.amount, i.currency, i.attempt_started_at,
                                 ${earlierUntil('i', '$1', '$2')} AS earlier_until
                            FROM intents i WHERE i.id = r.intent_id OFFSET 0) i
      WHERE i.status IN ('rejected', 'not_executed')
         OR (i.status IN ('in_progress', 'unknown') AND ${fromEarlierAttempt('r.executed_at', 'i.earlier_until')}
             AND NOT EXISTS (SELECT 1 FROM rec_intents c WHERE c.intent_id = r.intent_id))`,
    [input.settlementLagMs, input.clockSkewMs],
  );
  await db.query('ANALYZE rec_orphans');
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'orphan_partner_record', r.intent_id, r.intent_attempt, r.reference, r.partner_reference, r.amount,
            r.currency,
            'The partner reports an execution of ' || ${money('r.amount', 'r.currency')} ||
              COALESCE(' (reference ' || r.reference || ')', '') ||
              COALESCE(' (partner reference ' || r.partner_reference || ')', '') ||
              ' on line ' || r.line ||
              CASE WHEN r.intent_id IS NULL THEN ' that matches no intent of ours.'
                   WHEN r.earlier THEN ${earlierAttemptSentence({
                     id: 'r.intent_id',
                     reference: 'r.intent_reference',
                     attempt: 'r.intent_attempt',
                     status: 'r.intent_status',
                     startedAt: 'r.intent_started_at',
                     executedAt: 'r.executed_at',
                     candidate: 'false',
                   })}
                   ELSE ' for intent ' || r.intent_id || ', which we recorded as ' || r.intent_status ||
                        ': the partner executed something we believe did not happen.' END,
            jsonb_build_object(
              'rows', jsonb_build_array(jsonb_build_object(
                'recordId', pr.id::text, 'line', r.line, 'source', pr.source, 'identity', r.identity,
                'reference', r.reference, 'partnerReference', r.partner_reference, 'amount', r.amount::text,
                'currency', r.currency, 'executedAt', ${isoUtc('r.executed_at')})),
              'intent', CASE WHEN r.intent_id IS NULL THEN NULL
                             ELSE jsonb_build_object('intentId', r.intent_id::text, 'status', r.intent_status,
                                                     'attempt', r.intent_attempt, 'reference', r.intent_reference,
                                                     'amount', r.intent_amount::text,
                                                     'currency', r.intent_currency) END)
              || CASE WHEN r.earlier
                      THEN jsonb_build_object('earlierAttempt',
                             ${earlierJson('r.intent_attempt', 'r.intent_started_at', 'r.earlier_until')})
                      ELSE '{}'::jsonb END,
            'orphan_partner_record:' || $1 || ':' || r.identity,
            ARRAY[pr.id]
       FROM rec_orphans r
       LEFT JOIN rec_known k ON k.report_line = r.line
      CROSS JOIN LATERAL (SELECT COALESCE(k.record_id, r.record_id) AS id,
                                 COALESCE((SELECT run.source FROM reconciliation_runs run WHERE run.id = k.run_id),
                                          $2::text) AS source) pr`,
    [input.partner, input.source],
  );
}

/**
 * A row that could be the execution of more than one intent (see matchRows): one discrepancy per row, naming
 * every candidate with its status and attempt. None of them was resolved from the row, and none can be
 * proven absent while it stands (collectCandidates); the candidates still stuck past their deadline are
 * also `unresolved`. At risk: the row's amount, in its currency. Raised in lookup mode too (an answer may
 * name several of our references).
 */
export async function flagAmbiguous(
  db: Queryable,
  input: { partner: string; source: string },
): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'ambiguous_match', NULL, NULL, r.reference, r.partner_reference, r.amount, r.currency,
            'The partner reports an execution of ' || ${money('r.amount', 'r.currency')} ||
              COALESCE(' (reference ' || r.reference || ')', '') ||
              COALESCE(' (partner reference ' || r.partner_reference || ')', '') ||
              ' on line ' || r.line || ' that could be the execution of ' || count(*) || ' intents (' ||
              string_agg(i.id::text || ', ' || i.status, '; ' ORDER BY i.id) ||
              '): none of them was decided from it.',
            jsonb_build_object(
              'rows', jsonb_build_array(jsonb_build_object(
                'recordId', pr.id::text, 'line', r.line, 'source', pr.source, 'identity', r.identity,
                'reference', r.reference, 'partnerReference', r.partner_reference, 'amount', r.amount::text,
                'currency', r.currency, 'executedAt', ${isoUtc('r.executed_at')})),
              'candidates', jsonb_agg(jsonb_build_object(
                'intentId', i.id::text, 'attempt', i.attempt, 'status', i.status, 'reference', i.reference,
                'partnerReference', i.partner_reference, 'amount', i.amount::text, 'currency', i.currency,
                'createdAt', ${isoUtc('i.created_at')}, 'attemptStartedAt', ${isoUtc('i.attempt_started_at')})
                ORDER BY i.id)),
            'ambiguous_match:' || $1 || ':' || r.identity,
            ARRAY[pr.id]
       FROM rec_ambiguous a
       JOIN rec_report r ON r.line = a.line
       JOIN intents i ON i.id = a.intent_id
       LEFT JOIN rec_known k ON k.report_line = r.line
      CROSS JOIN LATERAL (SELECT COALESCE(k.record_id, r.record_id) AS id,
                                 COALESCE((SELECT run.source FROM reconciliation_runs run WHERE run.id = k.run_id),
                                          $2::text) AS source) pr
      GROUP BY r.line, r.reference, r.partner_reference, r.amount, r.currency, r.identity, r.executed_at, pr.id,
               pr.source`,
    [input.partner, input.source],
  );
}

/**
 * Stuck past the partner's deadline and not settled by this run, and still stuck now (an intent a caller
 * settled meanwhile is not flagged). One per (intent, attempt): a run without a report raises it under the
 * same key, so neither kind of run raises one twice. Usually nothing is on record either way, and the
 * summary says why nobody can tell: no report covers the intent, or, in a run without a report, that none
 * arrived (`noReport`, such as "no file matches reports/acme-pay/*.csv"), never that one was read. An intent
 * claimed again may also have only an earlier attempt's execution on record, which settles nothing
 * (resolveStuckIntents) and is flagged on its own (flagEarlierExecutions): the summary then says so.
 */
export async function flagUnresolved(
  db: Queryable,
  stuckAfterMs: number,
  noReport: string | undefined,
): Promise<void> {
  const why = noReport === undefined ? `'no report covers it.'` : `'no report arrived (' || $2 || ').'`;
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'unresolved', c.intent_id, c.attempt, c.reference, c.partner_reference, c.amount, c.currency,
            'Nobody can tell whether the partner executed ' || ${INTENT_NAME} || ' for ' ||
              ${money('c.amount', 'c.currency')} || ': it has been ' || c.status || ' since attempt ' || c.attempt ||
              ' started at ' || ${isoUtc('c.started_at')} || ', past the partner''s deadline, and ' ||
              CASE WHEN EXISTS (SELECT 1 FROM rec_evidence e WHERE e.intent_id = c.intent_id)
                   THEN 'the only executions on record are an earlier attempt''s.'
                   ELSE ${why} END,
            jsonb_build_object('intent', ${INTENT_JSON}, 'createdAt', ${isoUtc('c.created_at')}),
            'unresolved:' || c.intent_id || ':' || c.attempt,
            '{}'::bigint[]
       FROM rec_intents c
       JOIN intents i ON i.id = c.intent_id AND i.attempt = c.attempt AND ${stuckCondition('i', '$1')}
      WHERE c.role = 'stuck' AND c.past_deadline
        AND NOT EXISTS (SELECT 1 FROM rec_resolved s WHERE s.intent_id = c.intent_id)`,
    noReport === undefined ? [stuckAfterMs] : [stuckAfterMs, noReport],
  );
}
