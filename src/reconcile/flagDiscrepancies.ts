import type { Queryable } from '../database/queryable.js';
import type { Coverage } from './coverage.js';
import { earlierAttemptSentence, earlierUntil, fromEarlierAttempt } from './earlierAttempt.js';
import { isoUtc, money } from './sqlText.js';
import { stuckCondition } from './stuckCondition.js';

/** SQL: one evidence row `e` as it appears in a discrepancy's details. */
const EVIDENCE_JSON = `jsonb_build_object(
  'recordId', e.record_id::text, 'line', e.line,
  'source', (SELECT run.source FROM reconciliation_runs run WHERE run.id = e.run_id), 'runId', e.run_id::text,
  'identity', e.identity, 'reference', e.reference, 'partnerReference', e.partner_reference,
  'amount', e.amount::text, 'currency', e.currency, 'executedAt', ${isoUtc('e.executed_at')})`;

/** SQL: candidate intent `c` as it appears in a discrepancy's details. */
const INTENT_JSON = `jsonb_build_object(
  'intentId', c.intent_id::text, 'attempt', c.attempt, 'status', c.status, 'reference', c.reference,
  'amount', c.amount::text, 'currency', c.currency, 'attemptStartedAt', ${isoUtc('c.started_at')})`;

/** SQL: how intent `c` is named in a summary. */
const INTENT_NAME = `'intent ' || c.intent_id || COALESCE(' (reference ' || c.reference || ')', '')`;

const EVIDENCE_ORDER = 'e.executed_at NULLS LAST, e.run_id, e.line, e.record_id';

/**
 * Works out every discrepancy this run observes into `rec_flags`, one set-based INSERT per kind, each row
 * with its dedupe key (the identity of the problem, so a re-run finds it raised already), the intent and
 * attempt, the amount at risk with its currency, a sentence for finance, the rows behind it in `details`,
 * and the ids of their `partner_records`. Nothing is raised here: {@link raiseFlags} does that.
 */
export async function flagDiscrepancies(
  db: Queryable,
  input: {
    partner: string;
    source: string;
    stuckAfterMs: number;
    coverage: Coverage | null;
    lookup: boolean;
    /** Why the run has no report (see applyNoReport), worded into the `unresolved` summaries. */
    noReport?: string;
    runId: string;
    /** To judge a row an earlier attempt's (src/reconcile/earlierAttempt.ts). */
    settlementLagMs: number;
    clockSkewMs: number;
  },
): Promise<void> {
  await createFlagsTable(db);
  await findNotableIntents(db);
  await flagDuplicates(db);
  await flagEarlierExecutions(db, input);
  await flagMismatches(db);
  await flagCorrections(db);
  await flagLateExecutions(db, input);
  if (!input.lookup && input.coverage) await flagMissing(db, input.coverage);
  if (!input.lookup) await flagOrphans(db, input);
  await flagAmbiguous(db, input);
  await flagUnresolved(db, input.stuckAfterMs, input.noReport);
}

/** `rec_flags`, empty: what raiseFlags raises. */
async function createFlagsTable(db: Queryable): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_flags (
       kind text NOT NULL, intent_id bigint, attempt integer, reference text, partner_reference text,
       amount_at_risk numeric, currency text, summary text NOT NULL, details jsonb NOT NULL,
       dedupe_key text NOT NULL, partner_record_ids bigint[] NOT NULL
     ) ON COMMIT DROP`,
  );
}

/**
 * The few candidates whose executions need a look, into `rec_notable (intent_id, executions, earlier,
 * differs)`: two or more executions on record (flagDuplicates), an execution that is (or may be) an earlier
 * attempt's (flagEarlierExecutions), or one whose amount or currency differs from the intent's
 * (flagMismatches). One hash aggregate over every row of `rec_evidence`; each flag then reads only the rows of
 * these intents, through rec_evidence's intent index, instead of a pass over every row per kind. Into a table
 * of its own, ANALYZEd: the planner cannot know how few pass the HAVING (it guessed a third of the candidates
 * for a fraction of a percent) and hashed every candidate and every row again (docs/PERFORMANCE.md, "Staging
 * and deciding a report").
 */
async function findNotableIntents(db: Queryable): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_notable ON COMMIT DROP AS
     SELECT intent_id, count(*) AS executions, bool_or(earlier) AS earlier,
            bool_or(amount_differs OR currency_differs) AS differs
       FROM rec_evidence GROUP BY intent_id
     HAVING count(*) >= 2 OR bool_or(earlier) OR bool_or(amount_differs OR currency_differs)`,
  );
  await db.query('ANALYZE rec_notable');
}

/**
 * An intent with two or more executions on record. At risk: (executions - 1) x the intent's amount, in its
 * currency (what was charged beyond the one execution asked for; a partner's differing figures are
 * amount_mismatch's business). `executions` in the details lets raiseFlags update an open duplicate when a
 * later report shows another execution. Only the intents `rec_notable` kept with two or more executions are
 * read (findNotableIntents); only their rows are aggregated into details.
 */
async function flagDuplicates(db: Queryable): Promise<void> {
  // Their candidates are read by rec_intents' primary key, one probe each, in a LATERAL subquery that
  // OFFSET 0 keeps whole: joined, PostgreSQL hashed rec_intents, every candidate of the report, for a few
  // thousand of them (docs/PERFORMANCE.md, "Fewer passes over every row").
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'duplicate_execution', c.intent_id, c.attempt, c.reference,
            (array_agg(e.partner_reference ORDER BY ${EVIDENCE_ORDER}))[1],
            (count(*) - 1) * c.amount, c.currency,
            'The partner executed ' || ${INTENT_NAME} || ' ' || count(*) || ' times, for ' ||
              ${money('c.amount', 'c.currency')} || ' asked once: ' ||
              ${money('(count(*) - 1) * c.amount', 'c.currency')} || ' charged beyond it.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'executions', count(*),
                               'rows', jsonb_agg(${EVIDENCE_JSON} ORDER BY ${EVIDENCE_ORDER})),
            'duplicate_execution:' || c.intent_id,
            array_agg(e.record_id ORDER BY e.record_id)
       FROM (SELECT n.intent_id FROM rec_notable n WHERE n.executions >= 2 OFFSET 0) n
      CROSS JOIN LATERAL (SELECT c.* FROM rec_intents c WHERE c.intent_id = n.intent_id OFFSET 0) c
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      GROUP BY c.intent_id, c.attempt, c.reference, c.amount, c.currency, c.status, c.started_at`,
  );
}

/**
 * A stuck or completed candidate, claimed again, whose one execution on record is (or may be) an earlier
 * attempt's (`rec_evidence.earlier`, src/reconcile/earlierAttempt.ts): attempt 1, proven absent or reported
 * not executed, executed after all. Stuck, the intent stays so (resolveStuckIntents takes the row as no
 * proof either way); completed, its current attempt executed as well. Either way a person must know now: an
 * `orphan_partner_record` naming the earlier attempt, under the dedupe key flagOrphans gives the same row
 * (the partner and the row's identity), so the row is raised once whichever of the two sees it first (it may
 * have been raised while the current attempt was in flight) and a re-run raises nothing. At risk: the row's
 * amount, as for any orphan. With a second execution on record the intent is a `duplicate_execution`
 * instead, which shows both rows. Only the few intents rec_notable kept are read, by primary key.
 */
async function flagEarlierExecutions(
  db: Queryable,
  input: { partner: string; runId: string },
): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'orphan_partner_record', c.intent_id, c.attempt, e.reference, e.partner_reference, e.amount, e.currency,
            'The partner reports an execution of ' || ${money('e.amount', 'e.currency')} ||
              COALESCE(' (reference ' || e.reference || ')', '') ||
              COALESCE(' (partner reference ' || e.partner_reference || ')', '') ||
              ' on line ' || e.line ||
              CASE WHEN e.run_id IS DISTINCT FROM $2::bigint
                   THEN ' of the report of reconciliation run ' || e.run_id ELSE '' END ||
              ${earlierAttemptSentence({
                id: 'c.intent_id',
                reference: 'c.reference',
                attempt: 'c.attempt',
                status: 'i.status',
                startedAt: 'c.started_at',
                executedAt: 'e.executed_at',
                candidate: 'true',
              })},
            jsonb_build_object(
              'rows', jsonb_build_array(${EVIDENCE_JSON}),
              'intent', jsonb_build_object('intentId', c.intent_id::text, 'status', i.status, 'attempt', c.attempt,
                                           'reference', c.reference, 'amount', c.amount::text,
                                           'currency', c.currency),
              'earlierAttempt', ${earlierJson('c.attempt', 'c.started_at', 'c.earlier_until')}),
            'orphan_partner_record:' || $1 || ':' || e.identity,
            ARRAY[e.record_id]
       FROM (SELECT n.intent_id FROM rec_notable n WHERE n.executions = 1 AND n.earlier OFFSET 0) n
      CROSS JOIN LATERAL (SELECT c.* FROM rec_intents c WHERE c.intent_id = n.intent_id OFFSET 0) c
      CROSS JOIN LATERAL (SELECT i.status FROM intents i WHERE i.id = c.intent_id OFFSET 0) i
       JOIN rec_evidence e ON e.intent_id = c.intent_id`,
    [input.partner, input.runId],
  );
}

/**
 * SQL: why a row was taken as an earlier attempt's, in a discrepancy's details: the intent's attempt then,
 * its start, and the instant at or before which its rows are not its own (src/reconcile/earlierAttempt.ts).
 */
function earlierJson(attempt: string, startedAt: string, until: string): string {
  return `jsonb_build_object('currentAttempt', ${attempt}, 'currentAttemptStartedAt', ${isoUtc(startedAt)},
                             'notCurrentAtOrBefore', ${isoUtc(until)})`;
}

/**
 * An execution whose amount or currency differs from its intent, one per (intent, record). At risk: the
 * difference for amounts; for currencies, where a difference means nothing, the whole executed amount in
 * the currency it was executed in. Which rows differ was noted when `rec_evidence` was built, and which
 * intents have such a row in `rec_notable` (findNotableIntents): only their rows are read, through
 * rec_evidence's intent index, not every row once per kind. Their candidates are read by rec_intents'
 * primary key, one probe per intent (LATERAL, kept whole by OFFSET 0): joined, PostgreSQL hashed every
 * candidate of the report for a fraction of a percent of them (docs/PERFORMANCE.md, "Fewer passes over
 * every row").
 */
async function flagMismatches(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'amount_mismatch', c.intent_id, c.attempt, c.reference, e.partner_reference,
            abs(e.amount - c.amount), c.currency,
            'The partner executed ' || ${money('e.amount', 'e.currency')} || ' for ' || ${INTENT_NAME} ||
              ', which is for ' || ${money('c.amount', 'c.currency')} || '.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'rows', jsonb_build_array(${EVIDENCE_JSON})),
            'amount_mismatch:' || c.intent_id || ':' || e.identity,
            ARRAY[e.record_id]
       FROM (SELECT n.intent_id FROM rec_notable n WHERE n.differs OFFSET 0) n
      CROSS JOIN LATERAL (SELECT c.* FROM rec_intents c WHERE c.intent_id = n.intent_id OFFSET 0) c
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      WHERE e.amount_differs`,
  );
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'currency_mismatch', c.intent_id, c.attempt, c.reference, e.partner_reference,
            e.amount, e.currency,
            'The partner executed ' || ${money('e.amount', 'e.currency')} || ' for ' || ${INTENT_NAME} ||
              ', which is in ' || c.currency || '.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'rows', jsonb_build_array(${EVIDENCE_JSON})),
            'currency_mismatch:' || c.intent_id || ':' || e.identity,
            ARRAY[e.record_id]
       FROM (SELECT n.intent_id FROM rec_notable n WHERE n.differs OFFSET 0) n
      CROSS JOIN LATERAL (SELECT c.* FROM rec_intents c WHERE c.intent_id = n.intent_id OFFSET 0) c
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      WHERE e.currency_differs`,
  );
}

/**
 * The partner's corrected figure: a row whose execution an earlier run stored (same identity: partner
 * reference and reference, or reference and time) with another amount or currency. It is the same execution,
 * never a second one, and never silently ignored: a mismatch against the intent, showing the figure stored
 * before and the one reported now. At risk: the change in amount; for a currency, the new amount in its
 * currency. The dedupe key carries the new figure, so re-running either file raises nothing new and a
 * further correction raises again.
 */
async function flagCorrections(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT CASE WHEN r.currency IS DISTINCT FROM k.currency THEN 'currency_mismatch' ELSE 'amount_mismatch' END,
            i.id, i.attempt, i.reference, r.partner_reference,
            CASE WHEN r.currency IS DISTINCT FROM k.currency THEN r.amount ELSE abs(r.amount - k.amount) END,
            r.currency,
            'The partner corrected its figure for an execution of intent ' || i.id ||
              COALESCE(' (reference ' || i.reference || ')', '') || ': ' ||
              ${money('k.amount', 'k.currency')} || ' before, ' || ${money('r.amount', 'r.currency')} ||
              ' now (line ' || r.line || '), for ' || ${money('i.amount', 'i.currency')} || ' asked.',
            jsonb_build_object(
              'intent', jsonb_build_object('intentId', i.id::text, 'attempt', i.attempt, 'status', i.status,
                                           'reference', i.reference, 'amount', i.amount::text,
                                           'currency', i.currency),
              'before', jsonb_build_object('recordId', k.record_id::text, 'runId', k.run_id::text,
                                           'line', k.line, 'amount', k.amount::text, 'currency', k.currency),
              'now', jsonb_build_object('line', r.line, 'amount', r.amount::text, 'currency', r.currency,
                                        'executedAt', ${isoUtc('r.executed_at')})),
            CASE WHEN r.currency IS DISTINCT FROM k.currency THEN 'currency_mismatch' ELSE 'amount_mismatch' END ||
              ':' || i.id || ':' || r.identity || ':' || COALESCE(trim_scale(r.amount)::text, '') || ' ' ||
              COALESCE(r.currency, ''),
            ARRAY[k.record_id]
       FROM rec_known k
       JOIN rec_report r ON r.line = k.report_line
       JOIN intents i ON i.id = COALESCE(k.intent_id, r.intent_id)
      WHERE r.amount IS DISTINCT FROM k.amount OR r.currency IS DISTINCT FROM k.currency`,
  );
}

/**
 * An intent settled `not_executed` that this report shows executed, which correctLateExecutions corrected to
 * `completed` (see there for which rows qualify): a `late_completion`, the kind the ledger raises when a
 * caller's success arrives after such a settlement, under the same dedupe key (intent and attempt), since
 * it is the same problem found another way: the partner executed an attempt we had settled otherwise.
 * Finance checks whether a retry was charged elsewhere and why the settlement was wrong. At risk: the
 * intent's amount, as the ledger's. The summary says how it had been settled: proven absent by a run's
 * report (its reason names the run) or reported not executed by its caller.
 */
async function flagLateExecutions(db: Queryable, input: { source: string }): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'late_completion', i.id, c.attempt, i.reference, r.partner_reference, i.amount, i.currency,
            'We recorded intent ' || i.id || COALESCE(' (reference ' || i.reference || ')', '') ||
              ' as not executed on attempt ' || c.attempt ||
              CASE WHEN c.settled_reason ? 'runId'
                   THEN ', proven absent from the partner report of reconciliation run ' ||
                        (c.settled_reason->>'runId')
                   ELSE ', as its caller reported' END ||
              ', but the partner''s report shows it executed (' || ${money('r.amount', 'r.currency')} ||
              COALESCE(', partner reference ' || r.partner_reference, '') || ', line ' || r.line ||
              '). It is now completed, so the next delivery replays it instead of charging again. ' ||
              'Check whether a retry was charged elsewhere, and why it was recorded as not executed.',
            jsonb_build_object(
              'intent', jsonb_build_object('intentId', i.id::text, 'attempt', c.attempt, 'status', i.status,
                                           'reference', i.reference, 'amount', i.amount::text,
                                           'currency', i.currency),
              'settled', jsonb_build_object('status', 'not_executed', 'attempt', c.attempt,
                                            'by', c.settled_by, 'at', ${isoUtc('c.settled_at')},
                                            'reason', c.settled_reason),
              'corrected', true,
              'rows', jsonb_build_array(jsonb_build_object(
                'recordId', pr.id::text, 'line', r.line, 'source', pr.source, 'identity', r.identity,
                'reference', r.reference, 'partnerReference', r.partner_reference, 'amount', r.amount::text,
                'currency', r.currency, 'executedAt', ${isoUtc('r.executed_at')}))),
            'late_completion:' || i.id || ':' || c.attempt,
            ARRAY[pr.id]
       FROM rec_corrected c
       JOIN intents i ON i.id = c.intent_id
       JOIN rec_report r ON r.line = c.line
       LEFT JOIN rec_known k ON k.report_line = r.line
      CROSS JOIN LATERAL (SELECT COALESCE(k.record_id, r.record_id) AS id,
                                 COALESCE((SELECT run.source FROM reconciliation_runs run WHERE run.id = k.run_id),
                                          $1::text) AS source) pr`,
    [input.source],
  );
}

/** Completed on our side, inside the coverage, and the partner has no execution of it. */
async function flagMissing(db: Queryable, coverage: Coverage): Promise<void> {
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
       FROM rec_intents c
      WHERE c.role = 'settled' AND c.absence_proves
        AND NOT EXISTS (SELECT 1 FROM rec_evidence e WHERE e.intent_id = c.intent_id)`,
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
async function flagOrphans(
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
async function flagAmbiguous(db: Queryable, input: { partner: string; source: string }): Promise<void> {
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
async function flagUnresolved(
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
