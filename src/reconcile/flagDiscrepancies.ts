import type { Queryable } from '../sql/queryable.js';
import type { Coverage } from './coverage.js';
import { isoUtc, money } from './sqlText.js';
import { stuckCondition } from './stuckCondition.js';

/** SQL: one evidence row `e` as it appears in a discrepancy's details. */
const EVIDENCE_JSON = `jsonb_build_object(
  'recordId', e.record_id::text, 'line', e.line, 'source', e.source, 'runId', e.run_id::text,
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
  input: { partner: string; stuckAfterMs: number; coverage: Coverage | null; lookup: boolean },
): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_flags (
       kind text NOT NULL, intent_id bigint, attempt integer, reference text, partner_reference text,
       amount_at_risk numeric, currency text, summary text NOT NULL, details jsonb NOT NULL,
       dedupe_key text NOT NULL, partner_record_ids bigint[] NOT NULL
     ) ON COMMIT DROP`,
  );
  await flagDuplicates(db);
  await flagMismatches(db);
  if (!input.lookup && input.coverage) await flagMissing(db, input.coverage);
  if (!input.lookup) await flagOrphans(db, input.partner);
  await flagUnresolved(db, input.stuckAfterMs);
}

/** An intent with two or more executions on record: at risk is what was executed beyond the intent. */
export async function flagDuplicates(db: Queryable): Promise<void> {
  // The few intents executed twice are found first; only their rows are then aggregated into details.
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'duplicate_execution', c.intent_id, c.attempt, c.reference,
            (array_agg(e.partner_reference ORDER BY ${EVIDENCE_ORDER}))[1],
            sum(e.amount) - c.amount, c.currency,
            'The partner executed ' || ${INTENT_NAME} || ' ' || count(*) || ' times, ' ||
              ${money('sum(e.amount)', 'c.currency')} || ' in total, for ' || ${money('c.amount', 'c.currency')} ||
              ' asked once.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'executions', count(*),
                               'rows', jsonb_agg(${EVIDENCE_JSON} ORDER BY ${EVIDENCE_ORDER})),
            'duplicate_execution:' || c.intent_id,
            array_agg(e.record_id ORDER BY e.record_id)
       FROM (SELECT intent_id FROM rec_evidence GROUP BY intent_id HAVING count(*) >= 2) twice
       JOIN rec_intents c ON c.intent_id = twice.intent_id
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      GROUP BY c.intent_id, c.attempt, c.reference, c.amount, c.currency, c.status, c.started_at`,
  );
}

/**
 * An execution whose amount or currency differs from its intent, one per (intent, record). At risk: the
 * difference for amounts; for currencies, where a difference means nothing, the whole executed amount in
 * the currency it was executed in.
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
       FROM rec_intents c
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      WHERE e.amount <> c.amount`,
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
       FROM rec_intents c
       JOIN rec_evidence e ON e.intent_id = c.intent_id
      WHERE e.currency <> c.currency`,
  );
}

/** Completed on our side, inside the coverage, and the partner has no execution of it. */
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
       FROM rec_intents c
      WHERE c.role = 'settled' AND c.absence_proves
        AND NOT EXISTS (SELECT 1 FROM rec_evidence e WHERE e.intent_id = c.intent_id)`,
    [coverage.from, coverage.to],
  );
}

/**
 * Rows of this report that match no intent, or match one we believe did not happen (rejected or
 * not_executed: the partner executed something we would retry or have refused).
 */
export async function flagOrphans(db: Queryable, partner: string): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'orphan_partner_record', i.id, i.attempt, r.reference, r.partner_reference, r.amount, r.currency,
            'The partner reports an execution of ' || ${money('r.amount', 'r.currency')} ||
              COALESCE(' (reference ' || r.reference || ')', '') ||
              COALESCE(' (partner reference ' || r.partner_reference || ')', '') ||
              ' on line ' || r.line ||
              CASE WHEN i.id IS NULL THEN ' that matches no intent of ours.'
                   ELSE ' for intent ' || i.id || ', which we recorded as ' || i.status ||
                        ': the partner executed something we believe did not happen.' END,
            jsonb_build_object(
              'rows', jsonb_build_array(jsonb_build_object(
                'recordId', pr.id::text, 'line', r.line, 'source', pr.source, 'identity', r.identity,
                'reference', r.reference, 'partnerReference', r.partner_reference, 'amount', r.amount::text,
                'currency', r.currency, 'executedAt', ${isoUtc('r.executed_at')})),
              'intent', CASE WHEN i.id IS NULL THEN NULL
                             ELSE jsonb_build_object('intentId', i.id::text, 'status', i.status, 'attempt', i.attempt,
                                                     'reference', i.reference, 'amount', i.amount::text,
                                                     'currency', i.currency) END),
            'orphan_partner_record:' || $1 || ':' || r.identity,
            ARRAY[pr.id]
       FROM (SELECT r.*, m.intent_id
               FROM rec_report r
               LEFT JOIN rec_match m ON m.line = r.line
               LEFT JOIN intents mi ON mi.id = m.intent_id
              WHERE m.intent_id IS NULL OR mi.status IN ('rejected', 'not_executed')
             OFFSET 0) r
       LEFT JOIN intents i ON i.id = r.intent_id
       JOIN partner_records pr ON pr.partner = $1 AND pr.identity = r.identity`,
    [partner],
  );
}

/**
 * Stuck past the partner's deadline with nothing on record either way, and still stuck now (an intent a
 * caller settled meanwhile is not flagged). One per (intent, attempt).
 */
export async function flagUnresolved(db: Queryable, stuckAfterMs: number): Promise<void> {
  await db.query(
    `INSERT INTO rec_flags
     SELECT 'unresolved', c.intent_id, c.attempt, c.reference, c.partner_reference, c.amount, c.currency,
            'Nobody can tell whether the partner executed ' || ${INTENT_NAME} || ' for ' ||
              ${money('c.amount', 'c.currency')} || ': it has been ' || c.status || ' since attempt ' || c.attempt ||
              ' started at ' || ${isoUtc('c.started_at')} || ', past the partner''s deadline, and no report covers it.',
            jsonb_build_object('intent', ${INTENT_JSON}, 'createdAt', ${isoUtc('c.created_at')}),
            'unresolved:' || c.intent_id || ':' || c.attempt,
            '{}'::bigint[]
       FROM rec_intents c
       JOIN intents i ON i.id = c.intent_id AND i.attempt = c.attempt AND ${stuckCondition('i', '$1')}
      WHERE c.role = 'stuck' AND c.past_deadline AND NOT c.absence_proves
        AND NOT EXISTS (SELECT 1 FROM rec_evidence e WHERE e.intent_id = c.intent_id)`,
    [stuckAfterMs],
  );
}
