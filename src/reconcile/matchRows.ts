import type { Queryable } from '../database/queryable.js';
import { candidateColumns } from './candidateColumns.js';
import { type IdentifiedRows, REPORT_ROW_COLUMNS } from './identifyRows.js';

/** What matching made of a report: rows given to one intent, and rows that could be several intents'. */
export interface MatchOutcome {
  /** Rows paired with exactly one intent (their `rec_report.intent_id`). */
  matched: number;
  /** Rows that fit more than one intent and were given to none (`rec_ambiguous`, one row per candidate). */
  ambiguousRows: number;
}

/**
 * SQL: from `rec_candidates (line, intent_id, pinned, excluded, dead)`, which intent each row belongs to, if
 * exactly one can be told apart, into `rec_match (line, intent_id)`, and every candidate of the rows that
 * cannot, into `rec_ambiguous (line, intent_id)`. The rule (docs/DESIGN.md, "Matching"):
 *
 * 1. a row with one candidate is that intent's;
 * 2. else a candidate whose known partner reference is the row's (`pinned`) wins, if it is the only one;
 * 3. else candidates the row cannot be (`excluded`: their known partner reference is another, or they were
 *    created longer than the clock skew after the row's execution) drop out; one left wins;
 * 4. else a stuck or completed candidate is preferred over `rejected` / `not_executed` ones (`dead`), when it
 *    is the only one; the intent we believe never executed is the less likely owner of a real execution;
 * 5. otherwise the row is ambiguous: no tie-break guesses between two intents that might each be charged
 *    again, or never collected. Its candidates are the ones still standing at the step that left several.
 *
 * Under amount matching the candidates are every intent within the near-miss margin, and a row goes to the
 * one left standing only if that one also fits the match rule itself (`strict`); otherwise it goes to
 * nobody (an orphan, for a person) and, as a near miss, still keeps those intents from being proven absent.
 */
const DECIDE = `
  SELECT line, intent_id, strict, completed,
         CASE
           WHEN n = 1 THEN 'match'
           WHEN n_pinned = 1 THEN CASE WHEN pinned THEN 'match' END
           WHEN n_pinned > 1 THEN CASE WHEN pinned THEN 'ambiguous' END
           WHEN n_open = 0 THEN 'ambiguous'
           WHEN n_open = 1 THEN CASE WHEN NOT excluded THEN 'match' END
           WHEN n_live = 1 THEN CASE WHEN NOT excluded AND NOT dead THEN 'match' END
           WHEN n_live = 0 THEN CASE WHEN NOT excluded THEN 'ambiguous' END
           ELSE CASE WHEN NOT excluded AND NOT dead THEN 'ambiguous' END
         END AS choice
    FROM (SELECT c.*,
                 count(*) OVER w AS n,
                 count(*) FILTER (WHERE c.pinned) OVER w AS n_pinned,
                 count(*) FILTER (WHERE NOT c.excluded) OVER w AS n_open,
                 count(*) FILTER (WHERE NOT c.excluded AND NOT c.dead) OVER w AS n_live
            FROM rec_candidates c
            JOIN rec_contested k ON k.line = c.line
          WINDOW w AS (PARTITION BY c.line)) counted`;

/**
 * Decides, under reference or partner-reference matching, which intent each row of `rec_report` belongs to
 * (see {@link DECIDE}), from the candidates identifyRows joined to each row: `rec_report` holds one row per
 * (row, candidate intent) and a row without candidates once, `identified.rows` of them for
 * `identified.staged` report rows.
 *
 * When the two counts are equal, no row has two candidates, and a row with one is that intent's: the
 * candidates are the matches. `rec_report` keeps them as its `intent_id` and `intent_completed` (the
 * candidate columns only DECIDE reads are dropped). That is the usual case, and it costs no pass to find
 * the contested rows, nor one to copy the matches: later steps read them from `rec_report`.
 *
 * Otherwise the candidates of the rows that have several go to `rec_candidates`, DECIDE runs over them
 * (see {@link decide}), and `rec_report` is rebuilt with one row per report row: a row with at most one
 * candidate as it was, a contested one with the intent DECIDE gave it (or none: `rec_ambiguous` has its
 * candidates). That costs a pass to find those rows and one to rebuild the report, about what matching cost
 * before the two passes became one; a report with a single contested row takes it.
 */
export async function matchReferenceCandidates(
  db: Queryable,
  identified: IdentifiedRows,
): Promise<MatchOutcome> {
  if (identified.rows === identified.staged) {
    await db.query('ALTER TABLE rec_report RENAME COLUMN completed TO intent_completed');
    await db.query('ALTER TABLE rec_report DROP COLUMN pinned, DROP COLUMN excluded, DROP COLUMN dead');
    await db.query(
      'CREATE TEMP TABLE rec_ambiguous (line integer NOT NULL, intent_id bigint NOT NULL) ON COMMIT DROP',
    );
    await db.query('ANALYZE rec_ambiguous');
    const matched = await db.query<{ rows: number }>('SELECT count(intent_id)::int AS rows FROM rec_report');
    return { matched: matched.rows[0].rows, ambiguousRows: 0 };
  }
  await db.query('ALTER TABLE rec_report RENAME TO rec_report_candidates');
  // Only the rows with several candidates go to DECIDE: a row with one is that intent's already.
  await db.query(
    `CREATE TEMP TABLE rec_candidates ON COMMIT DROP AS
     SELECT line, intent_id, true AS strict, completed, pinned, excluded, dead
       FROM rec_report_candidates
      WHERE line IN (SELECT line FROM rec_report_candidates WHERE intent_id IS NOT NULL
                      GROUP BY line HAVING count(*) > 1)`,
  );
  const outcome = await decide(db);
  const columns = REPORT_ROW_COLUMNS.map((column) => `r.${column}`).join(', ');
  await db.query(
    `CREATE TEMP TABLE rec_report ON COMMIT DROP AS
     SELECT ${columns}, r.intent_id, r.completed AS intent_completed
       FROM rec_report_candidates r
      WHERE NOT EXISTS (SELECT 1 FROM rec_contested k WHERE k.line = r.line)
     UNION ALL
     SELECT ${columns}, m.intent_id, m.completed
       FROM (SELECT DISTINCT ON (c.line) c.*
               FROM rec_report_candidates c
              WHERE c.line IN (SELECT k.line FROM rec_contested k)
              ORDER BY c.line) r
       LEFT JOIN rec_match m ON m.line = r.line`,
  );
  await db.query('DROP TABLE rec_report_candidates');
  await db.query('ANALYZE rec_report');
  const matched = await db.query<{ rows: number }>('SELECT count(intent_id)::int AS rows FROM rec_report');
  return { matched: matched.rows[0].rows, ambiguousRows: outcome.ambiguousRows };
}

/**
 * Pairs the rows of `rec_report` with intents by amount and time, for partners that echo nothing of ours.
 * A row fits an intent that shares its currency, differs in amount by at most `amountTolerance` (numeric,
 * exact) and started its current attempt within `timeWindowMs` of the execution; {@link DECIDE} then keeps
 * only the rows that fit one intent and come near no other (the near-miss margin, as collectCandidates). Nearest-in-time is no rule: a partner that executed A at 10:00:09 would hand the
 * row to B started at 10:00:10, completing B (never executed) and proving A absent (charged again).
 * Two rows that each fit only one intent make it executed twice: a duplicate, for a person to look at.
 *
 * The intents considered are first narrowed to attempts started within the report's time span (plus the
 * near-miss window, which collectCandidates uses for the same intents) into a small indexed temp table
 * (`rec_amount_intents`), so the range join is an index scan per row, not rows x intents. Runs after
 * identifyRows: it needs the rows' execution times as timestamps and the (currency, executed_at) index.
 */
export async function matchReportByAmount(
  db: Queryable,
  partner: string,
  match: {
    amountTolerance: string;
    timeWindowMs: number;
    nearMissAmount: string | null;
    nearMissWindowMs: number;
  },
  clockSkewMs: number,
): Promise<MatchOutcome> {
  // Two disjoint halves, each on an index that holds no history: an intent is either unsettled
  // (`intents_unsettled`) or settled, and a settled one's settled_at is never before its attempt's start,
  // so those whose attempt started inside the span are among those settled since its start
  // (`intents_settled_at`). As one filter on attempt_started_at, which no index holds, this read every
  // intent of the partner, months of history included (docs/PERFORMANCE.md, "Cost independent of history").
  // The span is read first and passed as values, so the planner sees how recent it is, not a guess.
  const span = await db.query<{ lo: Date | null; hi: Date | null }>(
    'SELECT min(executed_at) AS lo, max(executed_at) AS hi FROM rec_report',
  );
  const fits = `i.partner = $1 AND i.amount IS NOT NULL AND i.currency IS NOT NULL
        AND i.attempt_started_at BETWEEN $3::timestamptz - $2 * interval '1 millisecond'
                                     AND $4::timestamptz + $2 * interval '1 millisecond'`;
  await db.query(
    `CREATE TEMP TABLE rec_amount_intents ON COMMIT DROP AS
     SELECT i.id AS intent_id, i.amount, i.currency, i.attempt_started_at AS started_at
       FROM intents i
      WHERE i.settled_at >= $3::timestamptz - $2 * interval '1 millisecond' AND ${fits}
     UNION ALL
     SELECT i.id AS intent_id, i.amount, i.currency, i.attempt_started_at AS started_at
       FROM intents i
      WHERE i.status IN ('in_progress', 'unknown') AND ${fits}`,
    [partner, match.nearMissWindowMs, span.rows[0].lo, span.rows[0].hi],
  );
  await db.query('CREATE INDEX ON rec_amount_intents (currency, started_at)');
  await db.query('ANALYZE rec_amount_intents');
  await db.query(
    `CREATE TEMP TABLE rec_candidates ON COMMIT DROP AS
     SELECT r.line, c.intent_id,
            (abs(r.amount - c.amount) <= $3::numeric
             AND c.started_at BETWEEN r.executed_at - $2::bigint * interval '1 millisecond'
                                  AND r.executed_at + $2::bigint * interval '1 millisecond') AS strict,
            ${candidateColumns('r', 'r.executed_at', '$1')}
       FROM rec_report r
       JOIN rec_amount_intents c
         ON c.currency = r.currency
        AND c.started_at BETWEEN r.executed_at - $4::bigint * interval '1 millisecond'
                             AND r.executed_at + $4::bigint * interval '1 millisecond'
       JOIN intents i ON i.id = c.intent_id
      WHERE r.amount IS NOT NULL AND r.executed_at IS NOT NULL
        AND abs(r.amount - c.amount) <=
            COALESCE($5::numeric, GREATEST(10 * $3::numeric, 0.01 * abs(c.amount)))`,
    [clockSkewMs, match.timeWindowMs, match.amountTolerance, match.nearMissWindowMs, match.nearMissAmount],
  );
  const outcome = await decide(db);
  const matched = await db.query(
    'UPDATE rec_report r SET intent_id = m.intent_id, intent_completed = m.completed FROM rec_match m WHERE m.line = r.line',
  );
  await db.query('ANALYZE rec_report');
  return { ...outcome, matched: matched.rowCount ?? 0 };
}

/**
 * Runs {@link DECIDE} over `rec_candidates` into `rec_match` and `rec_ambiguous`. Almost every row has one
 * candidate: those are matched straight from the candidates (a hash anti join against the few contested
 * lines, `rec_contested`), and only the rows with several go through the window, so the report is never
 * sorted by line as a whole.
 */
async function decide(db: Queryable): Promise<MatchOutcome> {
  await db.query('ANALYZE rec_candidates');
  await db.query(
    `CREATE TEMP TABLE rec_contested ON COMMIT DROP AS
     SELECT line FROM rec_candidates GROUP BY line HAVING count(*) > 1`,
  );
  await db.query('ANALYZE rec_contested');
  await db.query(`CREATE TEMP TABLE rec_decided ON COMMIT DROP AS ${DECIDE}`);
  // No indexes on these two: every later join with them is a hash join.
  const matched = await db.query(
    `CREATE TEMP TABLE rec_match ON COMMIT DROP AS
     SELECT c.line, c.intent_id, c.completed FROM rec_candidates c
      WHERE c.strict AND NOT EXISTS (SELECT 1 FROM rec_contested k WHERE k.line = c.line)
     UNION ALL
     SELECT line, intent_id, completed FROM rec_decided WHERE choice = 'match' AND strict`,
  );
  await db.query(
    `CREATE TEMP TABLE rec_ambiguous ON COMMIT DROP AS
     SELECT line, intent_id FROM rec_decided WHERE choice = 'ambiguous'`,
  );
  await db.query('ANALYZE rec_match');
  await db.query('ANALYZE rec_ambiguous');
  const ambiguous = await db.query<{ rows: number }>(
    'SELECT count(DISTINCT line)::int AS rows FROM rec_ambiguous',
  );
  return { matched: matched.rowCount ?? 0, ambiguousRows: ambiguous.rows[0].rows };
}
