import type { Queryable } from '../database/queryable.js';

/**
 * Pairs staged report rows with this partner's intents into `rec_match (line, intent_id)` by reference or
 * partner reference, one intent per row at most, entirely in SQL. Returns the number of rows matched. Runs
 * before identifyRows, which writes each row's intent into `rec_report` (see prepareReport).
 *
 * An equality join on the intents' (partner, reference) or (partner, partner_reference) index. Should two
 * intents share the value, the one agreeing in amount and currency wins, then the oldest: a row is one
 * execution and belongs to one intent.
 */
export async function matchStagedRows(
  db: Queryable,
  partner: string,
  by: 'reference' | 'partnerReference',
): Promise<number> {
  // One CREATE TABLE AS, several times faster than an INSERT into an indexed table: a hash join of the
  // report with the partner's intents, then the sort of DISTINCT ON, which picks the one intent per row,
  // about what the benchmark floor's join alone takes (docs/PERFORMANCE.md, "Staging and deciding a report").
  const column = by === 'reference' ? 'reference' : 'partner_reference';
  const matched = await db.query(
    `CREATE TEMP TABLE rec_match ON COMMIT DROP AS
     SELECT DISTINCT ON (s.line) s.line, i.id AS intent_id
       FROM rec_staged s
       JOIN intents i ON i.partner = $1 AND i.${column} = s.${column}
      ORDER BY s.line, (i.amount IS NOT DISTINCT FROM s.amount AND i.currency IS NOT DISTINCT FROM s.currency) DESC,
               i.id`,
    [partner],
  );
  // No index: every later join with it is a hash join, and the two indexes amount matching needs (on line
  // and intent_id) would cost more than they save here (docs/PERFORMANCE.md, "Staging and deciding a report").
  await db.query('ANALYZE rec_match');
  return matched.rowCount ?? 0;
}

/**
 * Pairs the rows of `rec_report` with intents by amount and time (see {@link matchByAmount}) into
 * `rec_match`, then writes each matched row's intent into `rec_report`. Runs after identifyRows: it needs
 * the rows' execution times as timestamps and the (currency, executed_at) index. Returns the number of rows
 * matched.
 */
export async function matchReportByAmount(
  db: Queryable,
  partner: string,
  match: { amountTolerance: string; timeWindowMs: number },
): Promise<number> {
  await db.query(
    `CREATE TEMP TABLE rec_match (line integer PRIMARY KEY, intent_id bigint NOT NULL) ON COMMIT DROP`,
  );
  // Before the inserts: amount matching's rounds look intents up in it.
  await db.query('CREATE INDEX ON rec_match (intent_id)');
  await matchByAmount(db, partner, match.amountTolerance, match.timeWindowMs);
  await db.query('ANALYZE rec_match');
  const matched = await db.query(
    'UPDATE rec_report r SET intent_id = m.intent_id FROM rec_match m WHERE m.line = r.line',
  );
  await db.query('ANALYZE rec_report');
  return matched.rowCount ?? 0;
}

/**
 * For partners that echo nothing of ours. A row and an intent are candidates when they share the currency,
 * the amounts differ by at most `tolerance` (numeric, exact) and the execution is within `windowMs` of
 * the intent's current attempt start. Pairs are then chosen one-to-one, nearest in time first (then the
 * closest amount, then line and id, so the choice is deterministic): each round pairs every row and intent
 * that are each other's best remaining candidate. The globally best remaining pair always is, so every
 * round makes progress and the loop ends; it usually takes one or two rounds.
 *
 * The intents considered are first narrowed to attempts started within the report's time span (plus the
 * window) into a small indexed temp table, so the range join is an index scan per row, not rows x intents.
 */
async function matchByAmount(
  db: Queryable,
  partner: string,
  tolerance: string,
  windowMs: number,
): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_amount_intents ON COMMIT DROP AS
     SELECT i.id AS intent_id, i.amount, i.currency, i.attempt_started_at AS started_at
       FROM intents i
      CROSS JOIN (SELECT min(executed_at) AS lo, max(executed_at) AS hi FROM rec_report) span
      WHERE i.partner = $1 AND i.amount IS NOT NULL AND i.currency IS NOT NULL
        AND i.attempt_started_at BETWEEN span.lo - $2 * interval '1 millisecond' AND span.hi + $2 * interval '1 millisecond'`,
    [partner, windowMs],
  );
  await db.query('CREATE INDEX ON rec_amount_intents (currency, started_at)');
  await db.query('ANALYZE rec_amount_intents');
  await db.query(
    `CREATE TEMP TABLE rec_amount_candidates ON COMMIT DROP AS
     SELECT r.line, c.intent_id,
            GREATEST(r.executed_at - c.started_at, c.started_at - r.executed_at) AS distance,
            abs(r.amount - c.amount) AS amount_diff
       FROM rec_report r
       JOIN rec_amount_intents c
         ON c.currency = r.currency
        AND c.started_at BETWEEN r.executed_at - $2 * interval '1 millisecond'
                             AND r.executed_at + $2 * interval '1 millisecond'
      WHERE r.amount IS NOT NULL AND r.executed_at IS NOT NULL
        AND abs(r.amount - c.amount) <= $1::numeric`,
    [tolerance, windowMs],
  );
  await db.query('ANALYZE rec_amount_candidates');
  for (;;) {
    const round = await db.query(
      `INSERT INTO rec_match (line, intent_id)
       SELECT line, intent_id
         FROM (SELECT c.line, c.intent_id,
                      row_number() OVER (PARTITION BY c.line ORDER BY c.distance, c.amount_diff, c.intent_id) AS row_rank,
                      row_number() OVER (PARTITION BY c.intent_id ORDER BY c.distance, c.amount_diff, c.line) AS intent_rank
                 FROM rec_amount_candidates c
                WHERE NOT EXISTS (SELECT 1 FROM rec_match m WHERE m.line = c.line)
                  AND NOT EXISTS (SELECT 1 FROM rec_match m WHERE m.intent_id = c.intent_id)) ranked
        WHERE row_rank = 1 AND intent_rank = 1`,
    );
    if ((round.rowCount ?? 0) === 0) return;
  }
}
