import type { Queryable } from '../database/queryable.js';
import { earlierAttemptSentence } from './earlierAttempt.js';
import {
  EVIDENCE_JSON,
  EVIDENCE_ORDER,
  earlierJson,
  INTENT_JSON,
  INTENT_NAME,
  notableCandidates,
} from './flagSql.js';
import { isoUtc, money } from './sqlText.js';

// What the executions on record of the run's candidate intents show (`rec_evidence`): executed twice, by an
// earlier attempt, for another amount or currency, corrected by the partner, or after we settled otherwise.
// Each kind is one INSERT into `rec_flags` (see flagDiscrepancies.ts).

/**
 * An intent with two or more executions on record. At risk: (executions - 1) x the intent's amount, in its
 * currency (what was charged beyond the one execution asked for; a partner's differing figures are
 * amount_mismatch's business). `executions` in the details lets raiseFlags update an open duplicate when a
 * later report shows another execution. Only the intents `rec_notable` kept with two or more executions are
 * read (collectNewEvidence); only their rows are aggregated into details.
 */
export async function flagDuplicates(db: Queryable): Promise<void> {
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
       FROM ${notableCandidates('n.executions >= 2')}
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
export async function flagEarlierExecutions(
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
       FROM ${notableCandidates('n.executions = 1 AND n.earlier')}
      CROSS JOIN LATERAL (SELECT i.status FROM intents i WHERE i.id = c.intent_id OFFSET 0) i
       JOIN rec_evidence e ON e.intent_id = c.intent_id`,
    [input.partner, input.runId],
  );
}

/**
 * An execution whose amount or currency differs from its intent, one per (intent, record). At risk: the
 * difference for amounts; for currencies, where a difference means nothing, the whole executed amount in
 * the currency it was executed in. Which rows differ was noted when `rec_evidence` was built, and which
 * intents have such a row in `rec_notable` (collectNewEvidence): only their rows are read, through
 * rec_evidence's intent index, not every row once per kind. Their candidates are read by rec_intents'
 * primary key, one probe per intent (LATERAL, kept whole by OFFSET 0): joined, PostgreSQL hashed every
 * candidate of the report for a fraction of a percent of them (docs/PERFORMANCE.md, "Fewer passes over
 * every row").
 */
export async function flagMismatches(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'amount_mismatch', c.intent_id, c.attempt, c.reference, e.partner_reference,
            abs(e.amount - c.amount), c.currency,
            'The partner executed ' || ${money('e.amount', 'e.currency')} || ' for ' || ${INTENT_NAME} ||
              ', which is for ' || ${money('c.amount', 'c.currency')} || '.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'rows', jsonb_build_array(${EVIDENCE_JSON})),
            'amount_mismatch:' || c.intent_id || ':' || e.identity,
            ARRAY[e.record_id]
       FROM ${notableCandidates('n.differs')}
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
       FROM ${notableCandidates('n.differs')}
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      WHERE e.currency_differs`,
  );
}

/**
 * The partner's corrected figure: a row whose execution an earlier run stored (same identity: partner
 * reference and reference, or reference and time) with another amount or currency. It is the same execution,
 * never a second one, and never silently ignored: a mismatch against the intent, showing the figure stored
 * before and the one reported now. At risk: the change in amount (from the intent's, when the figure was
 * unknown before); for a currency, the new amount in its currency. The dedupe key carries the new figure, so re-running either file raises nothing new and a
 * further correction raises again.
 *
 * Not a correction: a figure unknown before (a partner that prices an execution after reporting it, as
 * Twilio does a message; `amountMayBeMissing`) that is now the intent's own, or that an intent without an
 * amount has nothing to compare with. There is nothing to look at, and on a schedule that reads each
 * message before it is priced it was raised for most of them. A figure that comes in different from the
 * intent's is still raised here, since the stored record, which the run's evidence reads, keeps the
 * unknown one.
 */
export async function flagCorrections(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT CASE WHEN r.currency IS DISTINCT FROM k.currency THEN 'currency_mismatch' ELSE 'amount_mismatch' END,
            i.id, i.attempt, i.reference, r.partner_reference,
            CASE WHEN r.currency IS DISTINCT FROM k.currency THEN r.amount
                 ELSE abs(r.amount - COALESCE(k.amount, i.amount)) END,
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
      WHERE (r.amount IS DISTINCT FROM k.amount OR r.currency IS DISTINCT FROM k.currency)
        AND NOT (k.amount IS NULL AND (i.amount IS NULL OR (r.amount = i.amount AND r.currency = i.currency)))
                IS TRUE`,
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
export async function flagLateExecutions(db: Queryable, input: { source: string }): Promise<void> {
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
