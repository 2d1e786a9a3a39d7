import { isoUtc } from './sqlText.js';

// The SQL fragments every discrepancy kind writes into its summary and details (flagExecutions.ts,
// flagUnmatched.ts), so that finance reads one shape whatever raised it, and the FROM item of the candidates
// whose executions need a look, which they read.

/** SQL: one evidence row `e` as it appears in a discrepancy's details. */
export const EVIDENCE_JSON = `jsonb_build_object(
  'recordId', e.record_id::text, 'line', e.line,
  'source', (SELECT run.source FROM reconciliation_runs run WHERE run.id = e.run_id), 'runId', e.run_id::text,
  'identity', e.identity, 'reference', e.reference, 'partnerReference', e.partner_reference,
  'amount', e.amount::text, 'currency', e.currency, 'executedAt', ${isoUtc('e.executed_at')})`;

/** SQL: candidate intent `c` as it appears in a discrepancy's details. */
export const INTENT_JSON = `jsonb_build_object(
  'intentId', c.intent_id::text, 'attempt', c.attempt, 'status', c.status, 'reference', c.reference,
  'amount', c.amount::text, 'currency', c.currency, 'attemptStartedAt', ${isoUtc('c.started_at')})`;

/** SQL: how intent `c` is named in a summary. */
export const INTENT_NAME = `'intent ' || c.intent_id || COALESCE(' (reference ' || c.reference || ')', '')`;

/** SQL: the order an intent's evidence rows `e` are listed in, earliest execution first. */
export const EVIDENCE_ORDER = 'e.executed_at NULLS LAST, e.run_id, e.line, e.record_id';

/**
 * SQL: why a row was taken as an earlier attempt's, in a discrepancy's details: the intent's attempt then,
 * its start, and the instant at or before which its rows are not its own (src/reconcile/earlierAttempt.ts).
 */
export function earlierJson(attempt: string, startedAt: string, until: string): string {
  return `jsonb_build_object('currentAttempt', ${attempt}, 'currentAttemptStartedAt', ${isoUtc(startedAt)},
                             'notCurrentAtOrBefore', ${isoUtc(until)})`;
}

/**
 * SQL (a FROM item, alias `c`): the candidates `rec_notable` kept (collectNewEvidence) that satisfy `which`
 * (over its alias `n`). They are read by rec_intents' primary key, one probe each, in a LATERAL subquery that
 * OFFSET 0 keeps whole: joined, PostgreSQL hashed rec_intents, every candidate of the report, for a few
 * thousand of them (docs/PERFORMANCE.md, "Fewer passes over every row").
 */
export function notableCandidates(which: string): string {
  return `(SELECT n.intent_id FROM rec_notable n WHERE ${which} OFFSET 0) n
      CROSS JOIN LATERAL (SELECT c.* FROM rec_intents c WHERE c.intent_id = n.intent_id OFFSET 0) c`;
}
