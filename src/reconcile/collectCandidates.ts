import type { Queryable } from '../database/queryable.js';
import { TRIM_CHARACTERS } from '../shared/identifierText.js';
import type { Coverage } from './coverage.js';
import { earlierUntil, fromEarlierAttempt } from './earlierAttempt.js';
import { probeOrJoin, probesTable } from './probeOrJoin.js';
import type { ResolvedMatch } from './runSettings.js';
import { notKnown, RECORD_COLUMNS } from './storePartnerRecords.js';
import { stuckCondition } from './stuckCondition.js';

export interface CandidateInput {
  partner: string;
  match: ResolvedMatch;
  /** Lookup mode: absence is proven per looked-up intent (`rec_looked_up`), settled intents are not checked. */
  lookup: boolean;
  /** Rejected records may be executions of any intent: absence proves nothing in this run. */
  absenceUnprovable: boolean;
  /** Rejected records in the report (their identifiers are in `rec_rejected`). */
  rowsRejected: number;
  coverage: Coverage | null;
  stuckAfterMs: number;
  settlementLagMs: number;
  deadlineMs: number;
  /** How far the partner's clock may be from ours (`clockSkew`): the coverage is narrowed by it at both ends. */
  clockSkewMs: number;
}

/**
 * Collects the intents this run decides about into `rec_intents`, with the current attempt's start:
 * - `stuck`: see {@link stuckCondition};
 * - `settled`: completed intents whose attempt started inside the coverage (checked for
 *   missing_at_partner), or that a row of this report matched (checked for duplicates and mismatches).
 *
 * `absence_proves` says whether "no row for it" means "the partner did not execute it": the attempt started
 * at or after coverage_from + clockSkew and start + settlementLag + clockSkew <= coverage_to (the coverage is
 * the partner's clock, the start ours: an intent started a minute into the period by our clock may have been
 * dated a minute before it by a partner clock behind ours, and be in the previous report), and the intent has the value the
 * match rule pairs on (a row can never match an intent without a reference under reference matching, so its
 * absence proves nothing), and no rejected record of the report carries that value (`rec_rejected`: the
 * partner listed something for it that could not be read). When a rejected record may be anybody's
 * (`absenceUnprovable`), absence proves nothing for any intent of the run. In lookup mode the coverage of an intent is [its attempt start, now], for the
 * intents actually looked up whose answer held no item at all.
 *
 * `earlier_until` (src/reconcile/earlierAttempt.ts): for an intent claimed again (not under a key the
 * partner honours), the instant at or before which a row of it is, or may be, an earlier attempt's
 * execution and so no evidence about its current attempt; NULL for every other intent. Its lookup of the
 * earlier attempts runs only for intents on a later attempt, so a report of first attempts pays nothing.
 *
 * The sources are selected separately so each can use its index (unsettled intents by partner and lease,
 * completed ones by settled_at, which is never before the attempt start, matched ones by id), and they are
 * disjoint, so each row is read once with its attempt: stuck intents, completed intents settled since the
 * coverage start that are in it or matched, then the matched completed intents not collected yet (settled
 * before the coverage, or every one without a coverage). The previous form, a UNION of the three id lists
 * joined back to intents and attempts, deduplicated every id and hashed the intents a second time, and took
 * about twice as long (docs/PERFORMANCE.md, "Staging and deciding a report").
 */
export async function collectCandidates(db: Queryable, input: CandidateInput): Promise<void> {
  // $1 partner, $2 settlementLag, $3 stuckAfter, $4 deadline (ms); $5 and $6 coverage and $7 clockSkew (ms),
  // only when used; then match.shape, or the near-miss margins of amount matching ($8-$10). In lookup mode
  // match.shape is $5.
  const params: unknown[] = [input.partner, input.settlementLagMs, input.stuckAfterMs, input.deadlineMs];
  const lag = `$2 * interval '1 millisecond'`;
  let absence: string;
  let inCoverage: string | undefined;
  if (input.lookup) {
    absence = `(EXISTS (SELECT 1 FROM rec_looked_up l WHERE l.intent_id = i.id AND l.attempt = i.attempt AND l.items = 0)
                AND i.attempt_started_at + ${lag} <= now())`;
    // The partner's "no such reference" about one written in another form than its own proves nothing.
    if (input.match.by === 'reference' && input.match.shape !== undefined) {
      params.push(input.match.shape);
      absence = `(${absence} AND i.reference ~ $${params.length})`;
    }
  } else if (input.coverage) {
    params.push(input.coverage.from, input.coverage.to, input.clockSkewMs);
    const skew = `$7 * interval '1 millisecond'`;
    inCoverage = `(i.attempt_started_at - ${skew} >= $5::timestamptz
                   AND i.attempt_started_at + ${lag} + ${skew} <= $6::timestamptz)`;
    const conditions = [inCoverage, matchKeyPresent(input.match)];
    // Tested per intent only when some row is ambiguous: a NOT EXISTS against the empty table is still one
    // scan of it per candidate intent, a report's worth of them (docs/PERFORMANCE.md, "Staging and deciding
    // a report").
    if (await someRowAmbiguous(db)) conditions.push(notAmbiguous);
    // A value outside the partner's shape (match.shape) is one no row of it can ever carry.
    if (input.match.by !== 'amount' && input.match.shape !== undefined) {
      params.push(input.match.shape);
      const column = input.match.by === 'reference' ? 'i.reference' : 'i.partner_reference';
      conditions.push(`${column} ~ $${params.length}`);
    }
    if (input.rowsRejected > 0) conditions.push(notRejected(input.match));
    if (input.match.by === 'amount') {
      const match = input.match;
      if (await someRowUnplaceable(db)) conditions.push('false');
      params.push(match.nearMissWindowMs, match.amountTolerance, match.nearMissAmount);
      conditions.push(noNearMiss('$8', '$9', '$10'));
    }
    // `false` after the coverage test rather than instead of it: every statement below must still use
    // the three coverage parameters (PostgreSQL folds the constant away).
    if (input.absenceUnprovable) conditions.push('false');
    absence = `(${conditions.join(' AND ')})`;
  } else {
    // No coverage: absence proves nothing, and only matched completed intents are checked.
    absence = 'false';
  }
  // Always its own parameter: $7 exists only with a coverage.
  params.push(input.clockSkewMs);
  const anySkew = `$${params.length}`;
  const columns = `i.id AS intent_id, i.attempt,
            CASE WHEN i.status = 'completed' THEN 'settled' ELSE 'stuck' END AS role,
            i.status, i.reference, i.partner_reference, i.amount, i.currency, i.created_at,
            i.attempt_started_at AS started_at, i.attempt_started_at + ${lag} AS visible_by,
            ${absence} AS absence_proves,
            i.created_at < now() - $4 * interval '1 millisecond' AS past_deadline,
            ${earlierUntil('i', '$2', anySkew)} AS earlier_until`;
  const settledInCoverage = inCoverage
    ? `UNION ALL
       SELECT ${columns}
         FROM intents i
        WHERE i.settled_at >= $5::timestamptz AND i.partner = $1 AND i.status = 'completed'
          AND (${inCoverage} OR EXISTS (SELECT 1 FROM rec_report m WHERE m.intent_id = i.id))`
    : '';
  await db.query(
    `CREATE TEMP TABLE rec_intents ON COMMIT DROP AS
     SELECT ${columns}
       FROM intents i
      WHERE i.partner = $1 AND ${stuckCondition('i', '$3')}
     ${settledInCoverage}`,
    params,
  );
  if (!input.lookup) {
    // The matched completed intents not collected above: with a coverage, those settled before it (usually
    // a handful). Completed, so never stuck: that condition only keeps every parameter typed.
    // The matches are first narrowed to the intents not collected yet (an anti join of two run tables, with
    // statistics: rec_intents is ANALYZEd for it), so that with a coverage the intents are read by primary
    // key for those few. Written as "matched, and settled before the coverage", PostgreSQL was free to
    // read `intents_settled_at` for every intent settled before the coverage, which on a ledger with
    // months of history is millions of index entries for a handful of matches (docs/PERFORMANCE.md, "Cost
    // independent of history"). Without a coverage nearly every match is left, and a hash join is right.
    const notCollected = inCoverage ? 'AND i.settled_at < $5::timestamptz' : '';
    await db.query('ANALYZE rec_intents');
    await db.query(
      `INSERT INTO rec_intents
       SELECT ${columns}
         FROM intents i
        WHERE i.partner = $1 AND i.status = 'completed' ${notCollected}
          AND i.id IN (SELECT m.intent_id FROM rec_report m
                        WHERE m.intent_id IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM rec_intents c WHERE c.intent_id = m.intent_id))
          AND NOT ${stuckCondition('i', '$3')}`,
      params,
    );
  }
  await db.query('ALTER TABLE rec_intents ADD PRIMARY KEY (intent_id)');
  // The stuck candidates are a few beside the settled ones a report brings (every completed intent in its
  // coverage), and four statements read only them: the two settlements, the reference-shape check and the
  // unresolved flags. Without this index each of them read every candidate to find the stuck ones
  // (docs/PERFORMANCE.md, "The stuck candidates apart").
  await db.query(`CREATE INDEX rec_intents_stuck ON rec_intents (intent_id) WHERE role = 'stuck'`);
  await db.query('ANALYZE rec_intents');
}

/** SQL: no row of the report could be intent `i`'s execution and another intent's alike (see matchRows). */
const notAmbiguous = 'NOT EXISTS (SELECT 1 FROM rec_ambiguous a WHERE a.intent_id = i.id)';

/**
 * SQL: no row of the report comes near intent `i` by amount and time, under the near-miss margin (wider
 * than the match rule): a row 0.011 off under a 0.01 tolerance, or a partner clock 12 minutes off under a
 * 10-minute window, may still be its execution, so its absence is not proven. Whatever intent the row was
 * given to. `window`, `tolerance` and `nearMiss` are the placeholders of the near-miss window (ms), the
 * match tolerance and the configured near-miss amount (null: the larger of 10 x tolerance and 1% of the
 * intent's amount). Uses rec_report's (currency, executed_at) index.
 */
function noNearMiss(window: string, tolerance: string, nearMiss: string): string {
  return `NOT EXISTS (SELECT 1 FROM rec_report r
                       WHERE r.currency = i.currency
                         AND r.executed_at BETWEEN i.attempt_started_at - ${window}::bigint * interval '1 millisecond'
                                               AND i.attempt_started_at + ${window}::bigint * interval '1 millisecond'
                         AND abs(r.amount - i.amount) <=
                             COALESCE(${nearMiss}::numeric, GREATEST(10 * ${tolerance}::numeric, 0.01 * abs(i.amount))))`;
}

/** Whether matching left any row ambiguous (`rec_ambiguous`, see matchRows). */
async function someRowAmbiguous(db: Queryable): Promise<boolean> {
  const result = await db.query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM rec_ambiguous) AS found');
  return result.rows[0].found;
}

/**
 * Under amount matching, an accepted row without an amount, a currency or a time cannot be placed near or
 * far from any intent: it may be anybody's execution, so the run proves nothing absent.
 */
async function someRowUnplaceable(db: Queryable): Promise<boolean> {
  const result = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM rec_report
                     WHERE amount IS NULL OR currency IS NULL OR executed_at IS NULL) AS found`,
  );
  return result.rows[0].found;
}

/** SQL: intent `i` has what the match rule pairs on, so a missing row means something. */
function matchKeyPresent(match: ResolvedMatch): string {
  switch (match.by) {
    // Report identifiers are read trimmed (src/shared/identifierText.ts): an intent whose own value has
    // edge whitespace, or is blank, can never be matched by one, so its absence from a report proves nothing.
    case 'reference':
      return trimmedValue('i.reference');
    case 'partnerReference':
      return trimmedValue('i.partner_reference');
    case 'amount':
      return '(i.amount IS NOT NULL AND i.currency IS NOT NULL)';
  }
}

/** SQL: `column` holds a value that a trimmed report identifier can equal. */
function trimmedValue(column: string): string {
  // TRIM_CHARACTERS holds no quote or backslash: it is a plain SQL literal as it is.
  return `(${column} <> '' AND ${column} = btrim(${column}, '${TRIM_CHARACTERS}'))`;
}

/**
 * SQL: no rejected record of the report carries intent `i`'s match key. The partner listed something for
 * it that could not be accepted (a bad amount, currency or time), so its row is not absent, only unread.
 * (Under amount matching any rejection makes absence unprovable instead, see runOnce.)
 */
function notRejected(match: ResolvedMatch): string {
  switch (match.by) {
    case 'reference':
      return 'NOT EXISTS (SELECT 1 FROM rec_rejected r WHERE r.reference = i.reference)';
    case 'partnerReference':
      return 'NOT EXISTS (SELECT 1 FROM rec_rejected r WHERE r.partner_reference = i.partner_reference)';
    case 'amount':
      return 'true';
  }
}

/**
 * Everything known to be an execution of each candidate intent, into `rec_evidence`: records any run
 * matched to it, plus this report's rows matched to it whose record an earlier run had stored under another
 * intent or none. A row seen while the intent was not stuck yet still proves the execution later; counting
 * records also catches a second execution that shows up in a later report. The parts are disjoint, so no
 * de-duplication pass is needed.
 *
 * Not the record's source: it is its run's (reconciliation_runs.source), read for the few rows a
 * discrepancy shows; a file path on each of a million rows made the table much larger.
 *
 * Each row also says whether its amount or its currency differs from the intent's (`amount_differs`,
 * `currency_differs`, false when either side is missing), so that flagMismatches finds the few such rows by
 * a column PostgreSQL has statistics on, instead of joining every row to its intent again, once per kind
 * (docs/PERFORMANCE.md, "Staging and deciding a report", has the figures for this table), and whether it is
 * (or may be) an earlier attempt's execution of an intent claimed again (`earlier`, from the candidate's
 * `earlier_until`): an execution of the intent, counted as one, but no evidence about its current attempt
 * (resolveStuckIntents, flagDiscrepancies).
 *
 * In two steps around storePartnerRecords, so that neither reads this run's records back from
 * `partner_records` (a million rows the planner knows nothing about yet, read right after writing them):
 * this function before, from what earlier runs stored (`partner_records`, and `rec_known` for this
 * report's rows among them), and {@link collectNewEvidence} after, from the report's new rows.
 *
 * Its plan: the candidates' stored records through the `partner_records_intent` index, one probe per
 * candidate, unless the table is of the candidates' size ({@link probesTable}). The table holds the records
 * of every earlier report, and a hash join read all of it, seconds per run on a ledger with months of
 * history (docs/PERFORMANCE.md, "Cost independent of history").
 */
export async function collectStoredEvidence(db: Queryable): Promise<void> {
  const records = probeOrJoin(
    await probesTable(db, 'partner_records', 'rec_intents'),
    'partner_records',
    'pr',
    RECORD_COLUMNS,
    `pr.intent_id = c.intent_id AND pr.kind = 'execution'`,
  );
  await db.query(
    `CREATE TEMP TABLE rec_evidence ON COMMIT DROP AS
     SELECT c.intent_id, pr.id AS record_id, pr.identity, pr.line, pr.run_id, pr.reference,
            pr.partner_reference, pr.amount, pr.currency, pr.executed_at,
            ${evidenceFlags('pr')}
       FROM rec_intents c
       ${records}
     UNION ALL
     SELECT c.intent_id, k.record_id, k.identity, k.line, k.run_id, k.reference,
            k.partner_reference, k.amount, k.currency, k.executed_at, ${evidenceFlags('k')}
       FROM rec_report m
       JOIN rec_intents c ON c.intent_id = m.intent_id
       JOIN rec_known k ON k.report_line = m.line
      WHERE k.intent_id IS DISTINCT FROM m.intent_id`,
  );
}

/**
 * Tallies each candidate's executions on record, the earlier runs' (`rec_evidence` so far, see
 * {@link collectStoredEvidence}) and this report's new rows together, and keeps in `rec_notable (intent_id,
 * executions, earlier, differs)` the candidates that need a look:
 * - every stuck one (resolveStuckIntents settles it from its executions, or from their absence);
 * - one with no execution on record (`executions` 0: flagMissing, for a completed one);
 * - one with two or more (flagDuplicates), or one that is (or may be) an earlier attempt's (`earlier`,
 *   flagEarlierExecutions), or whose amount or currency differs from the intent's (`differs`, flagMismatches).
 * Then it adds to `rec_evidence` the new rows of those candidates only, under the ids storePartnerRecords gave
 * them. Every later reader of `rec_evidence` reads only such candidates' rows, so each has all its rows there.
 * Joined, not read by primary key as the flags read them (flagSql.ts, notableCandidates): a subquery's output
 * has no statistics, and PostgreSQL, taking its ids for a few hundred distinct values, hashed the whole
 * report instead of them.
 *
 * A completed intent the report shows once, as asked, is none of these: it is almost every candidate of a
 * large report. Copying each of its rows into `rec_evidence`, indexing them, then aggregating them and
 * anti-joining every candidate against them for the missing ones were four passes over the report; the tally
 * is one join and one aggregate, and what is copied is a few percent of the rows (docs/PERFORMANCE.md,
 * "Evidence for the candidates that need a look (stop 26)").
 *
 * The aggregate groups the candidates themselves (a LEFT JOIN), so a candidate without rows is counted 0 and
 * judged on no row (the FILTERs: a missing row's NULLs would read as an earlier attempt's execution). The
 * earlier runs' records are aggregated apart and added: usually there are none, or few.
 */
export async function collectNewEvidence(
  db: Queryable,
  input: { runId: string; knownRows: number },
): Promise<void> {
  const newRows = `(SELECT r.intent_id, r.record_id, r.identity, r.line, r.reference, r.partner_reference,
                           r.amount, r.currency, r.executed_at
                      FROM rec_report r
                     WHERE r.intent_id IS NOT NULL AND ${notKnown('r', input.knownRows)})`;
  await db.query(
    `CREATE TEMP TABLE rec_notable ON COMMIT DROP AS
     SELECT t.intent_id, t.executions + COALESCE(s.executions, 0) AS executions,
            t.earlier OR COALESCE(s.earlier, false) AS earlier,
            t.differs OR COALESCE(s.differs, false) AS differs
       FROM (SELECT c.intent_id, c.role, count(r.intent_id) AS executions,
                    COALESCE(bool_or(${evidenceFlag('earlier', 'r')}) FILTER (WHERE r.intent_id IS NOT NULL),
                             false) AS earlier,
                    COALESCE(bool_or(${evidenceFlag('amount_differs', 'r')} OR ${evidenceFlag('currency_differs', 'r')})
                               FILTER (WHERE r.intent_id IS NOT NULL), false) AS differs
               FROM rec_intents c
               LEFT JOIN ${newRows} r ON r.intent_id = c.intent_id
              GROUP BY c.intent_id) t
       LEFT JOIN (SELECT intent_id, count(*) AS executions, bool_or(earlier) AS earlier,
                         bool_or(amount_differs OR currency_differs) AS differs
                    FROM rec_evidence GROUP BY intent_id) s ON s.intent_id = t.intent_id
      WHERE t.role = 'stuck' OR t.executions + COALESCE(s.executions, 0) <> 1
         OR t.earlier OR t.differs OR COALESCE(s.earlier OR s.differs, false)`,
  );
  await db.query('ALTER TABLE rec_notable ADD PRIMARY KEY (intent_id)');
  await db.query('ANALYZE rec_notable');
  await db.query(
    `INSERT INTO rec_evidence
     SELECT c.intent_id, r.record_id, r.identity, r.line, $1::bigint, r.reference, r.partner_reference,
            r.amount, r.currency, r.executed_at, ${evidenceFlags('r')}
       FROM ${newRows} r
       JOIN rec_notable n ON n.intent_id = r.intent_id
       JOIN rec_intents c ON c.intent_id = r.intent_id`,
    [input.runId],
  );
  await db.query('CREATE INDEX ON rec_evidence (intent_id)');
  await db.query('ANALYZE rec_evidence');
}

/**
 * SQL: how record `alias` compares with candidate `c`, as the three flag columns of `rec_evidence`: its
 * amount or currency differs, or it is (or may be) an earlier attempt's execution (`earlier`, see
 * src/reconcile/earlierAttempt.ts; false for every row of an intent on its first attempt).
 */
function evidenceFlags(alias: string): string {
  return `${evidenceFlag('amount_differs', alias)} AS amount_differs,
            ${evidenceFlag('currency_differs', alias)} AS currency_differs,
            ${evidenceFlag('earlier', alias)} AS earlier`;
}

/** SQL: one of the flag columns of `rec_evidence` (see {@link evidenceFlags}) for record `alias`. */
function evidenceFlag(flag: 'amount_differs' | 'currency_differs' | 'earlier', alias: string): string {
  switch (flag) {
    case 'amount_differs':
      return `COALESCE(${alias}.amount <> c.amount, false)`;
    case 'currency_differs':
      return `COALESCE(${alias}.currency <> c.currency, false)`;
    case 'earlier':
      return fromEarlierAttempt(`${alias}.executed_at`, 'c.earlier_until', {
        partnerReference: `${alias}.partner_reference`,
        recorded: `CASE WHEN c.status = 'completed' THEN c.partner_reference END`,
      });
  }
}
