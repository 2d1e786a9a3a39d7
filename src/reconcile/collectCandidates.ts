import type { Queryable } from '../sql/queryable.js';
import type { Coverage } from './coverage.js';
import type { ResolvedMatch } from './runSettings.js';
import { stuckCondition } from './stuckCondition.js';

export interface CandidateInput {
  partner: string;
  match: ResolvedMatch;
  /** Lookup mode: absence is proven per looked-up intent (`rec_looked_up`), settled intents are not checked. */
  lookup: boolean;
  coverage: Coverage | null;
  stuckAfterMs: number;
  settlementLagMs: number;
  deadlineMs: number;
}

/**
 * Collects the intents this run decides about into `rec_intents`, with the current attempt's start:
 * - `stuck`: see {@link stuckCondition};
 * - `settled`: completed intents whose attempt started inside the coverage (checked for
 *   missing_at_partner), or that a row of this report matched (checked for duplicates and mismatches).
 *
 * `absence_proves` says whether "no row for it" means "the partner did not execute it": the attempt started
 * at or after coverage_from and start + settlementLag <= coverage_to, and the intent has the value the
 * match rule pairs on (a row can never match an intent without a reference under reference matching, so its
 * absence proves nothing). In lookup mode the coverage of an intent is [its attempt start, now], for the
 * intents actually looked up whose answer held no item at all.
 *
 * The three sources are selected separately so each uses its index (unsettled intents by partner and lease,
 * completed ones by settled_at, which is never before the attempt start, matched ones by id).
 */
export async function collectCandidates(db: Queryable, input: CandidateInput): Promise<void> {
  // $1 partner, $2 settlementLag, $3 stuckAfter, $4 deadline (ms); $5 and $6 coverage, only when used.
  const params: unknown[] = [input.partner, input.settlementLagMs, input.stuckAfterMs, input.deadlineMs];
  const lag = `$2 * interval '1 millisecond'`;
  let absence: string;
  let settledSources = '';
  let settledRole = 'false';
  if (input.lookup) {
    absence = `(EXISTS (SELECT 1 FROM rec_looked_up l WHERE l.intent_id = i.id AND l.attempt = i.attempt AND l.items = 0)
                AND a.started_at + ${lag} <= now())`;
  } else if (input.coverage) {
    params.push(input.coverage.from, input.coverage.to);
    const inCoverage = `(a.started_at >= $5::timestamptz AND a.started_at + ${lag} <= $6::timestamptz)`;
    absence = `(${inCoverage} AND ${matchKeyPresent(input.match)})`;
    settledSources = `UNION
       SELECT i.id FROM intents i
        WHERE i.settled_at >= $5::timestamptz AND i.partner = $1 AND i.status = 'completed'
       UNION
       SELECT m.intent_id FROM rec_match m`;
    settledRole = `(i.status = 'completed'
                    AND (${inCoverage} OR EXISTS (SELECT 1 FROM rec_match m WHERE m.intent_id = i.id)))`;
  } else {
    // No coverage: absence proves nothing, and only matched completed intents are checked.
    absence = 'false';
    settledSources = 'UNION SELECT m.intent_id FROM rec_match m';
    settledRole = `(i.status = 'completed' AND EXISTS (SELECT 1 FROM rec_match m WHERE m.intent_id = i.id))`;
  }
  await db.query(
    `CREATE TEMP TABLE rec_intents ON COMMIT DROP AS
     WITH ids AS (
       SELECT i.id FROM intents i WHERE i.partner = $1 AND ${stuckCondition('i', '$3')}
       ${settledSources}
     )
     SELECT i.id AS intent_id, i.attempt, CASE WHEN i.status = 'completed' THEN 'settled' ELSE 'stuck' END AS role,
            i.status, i.reference, i.partner_reference, i.amount, i.currency, i.created_at, a.started_at,
            a.started_at + ${lag} AS visible_by,
            ${absence} AS absence_proves,
            i.created_at < now() - $4 * interval '1 millisecond' AS past_deadline
       FROM ids
       JOIN intents i ON i.id = ids.id
       JOIN intent_attempts a ON a.intent_id = i.id AND a.attempt = i.attempt
      WHERE i.partner = $1 AND (${stuckCondition('i', '$3')} OR ${settledRole})`,
    params,
  );
  await db.query('ALTER TABLE rec_intents ADD PRIMARY KEY (intent_id)');
  await db.query('ANALYZE rec_intents');
}

/** SQL: intent `i` has what the match rule pairs on, so a missing row means something. */
function matchKeyPresent(match: ResolvedMatch): string {
  switch (match.by) {
    case 'reference':
      return 'i.reference IS NOT NULL';
    case 'partnerReference':
      return 'i.partner_reference IS NOT NULL';
    case 'amount':
      return '(i.amount IS NOT NULL AND i.currency IS NOT NULL)';
  }
}

/**
 * Everything known to be an execution of each candidate intent, into `rec_evidence`: records any run
 * matched to it (this run's new rows included, stored just before), plus this report's rows matched to it
 * whose record an earlier run had stored under another intent or none. A row seen while the intent was not
 * stuck yet still proves the execution later; counting records also catches a second execution that shows
 * up in a later report. The two parts are disjoint, so no de-duplication pass is needed.
 */
export async function collectEvidence(db: Queryable, partner: string): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_evidence ON COMMIT DROP AS
     SELECT c.intent_id, pr.id AS record_id, pr.identity, pr.line, pr.run_id, pr.source, pr.reference,
            pr.partner_reference, pr.amount, pr.currency, pr.executed_at
       FROM rec_intents c
       JOIN partner_records pr ON pr.intent_id = c.intent_id
     UNION ALL
     SELECT c.intent_id, pr.id, pr.identity, pr.line, pr.run_id, pr.source, pr.reference,
            pr.partner_reference, pr.amount, pr.currency, pr.executed_at
       FROM rec_match m
       JOIN rec_intents c ON c.intent_id = m.intent_id
       JOIN rec_report r ON r.line = m.line
       JOIN partner_records pr ON pr.partner = $1 AND pr.identity = r.identity
      WHERE pr.intent_id IS DISTINCT FROM m.intent_id`,
    [partner],
  );
  await db.query('CREATE INDEX ON rec_evidence (intent_id)');
  await db.query('ANALYZE rec_evidence');
}
