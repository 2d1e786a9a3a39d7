import type { Queryable } from '../database/queryable.js';

/**
 * SQL: the identity of staged row `s` without its occurrence number (see {@link identifyRows}). Migration
 * 0007 rewrote the identities stored before with this same expression, and 0019 over identifiers trimmed as
 * reports are now read (src/shared/identifierText.ts): keep them in step.
 */
export const IDENTITY_BASE = `COALESCE(s.partner_reference || '|' || COALESCE(s.reference, ''),
         'ref:' || COALESCE(s.reference, '') || '|' ||
         COALESCE(to_char(s.executed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), ''))`;

/**
 * Turns the staged rows into `rec_report`, the table every later step reads: each row gets its identity,
 * the key under which `partner_records` remembers it across runs, so a re-run of the same report finds
 * its rows already there, and, with `joinMatches` (rec_match was built from the staged rows), the intent it
 * matched (`intent_id`, and `intent_completed`, whether that intent was completed when matched; otherwise
 * null until amount matching writes them).
 *
 * Identity: `<partner reference>|<reference>` when the row has a partner reference, else
 * `ref:<reference>|<executed_at>` (time in ISO 8601 UTC), plus `#<n>`, the occurrence of that base in line
 * order, so two genuinely identical executions in one report are two records, not one. Never the amount:
 * a partner's corrected figure for an execution it reported before is the same execution (a correction,
 * flagged as a mismatch), not a second one. The reference is part of it: a partner reference the partner
 * reuses another day for another order is another execution.
 *
 * Built with CREATE TABLE AS rather than an UPDATE of the staging table: one sequential write, no dead
 * tuples. Execution times arrive as epoch milliseconds (see createStagingTable) and are rebuilt as whole
 * days plus milliseconds on a `timestamp` (interval multiplication goes through float8, exact for both
 * parts, and timestamp arithmetic ignores the session time zone), then read as UTC: the same instants.
 *
 * The occurrence used to come from `row_number() OVER (PARTITION BY base ORDER BY line)` over every row,
 * which sorts the whole report (and a large one spilled that sort to disk). Almost every base occurs once,
 * so every row is written with `#1` in staging (line) order without a sort, and only the rows of bases
 * that occur more than once are numbered and rewritten (a hash aggregate over the report, then a few rows):
 * together faster than the sort alone. The identities are the same.
 *
 * Each row also draws its `partner_records` id here (`record_id`), whether or not it turns out to be new:
 * storePartnerRecords then inserts with these ids instead of materialising what `RETURNING` gives back, and
 * later steps find a new row's record by its line. Drawn in the scan of the staging table, which holds the
 * rows in line order (COPY appends them so), before the join with the matches, whichever way the planner
 * runs it: ids follow lines, as the review page's "in id order" expects. A known row's id is simply never
 * used (the sequence has gaps anyway); drawing it costs less than the `RETURNING` table and the sort that
 * gave ids in line order cost together.
 *
 * Indexes are created after loading, only those later steps use: none for reference and partner-reference
 * matching (every join on this table is a hash join, and a line or reference index only cost time), the
 * (currency, executed_at) one for amount matching. The table is ANALYZEd, since autovacuum never analyzes
 * temp tables and the planner would otherwise guess its size.
 *
 * Figures for each of these choices: docs/PERFORMANCE.md, "Staging and deciding a report".
 */
export async function identifyRows(db: Queryable, options: { joinMatches: boolean }): Promise<void> {
  const matched = options.joinMatches;
  // Looked up once: as an argument of nextval it would be resolved again for every row, which costs
  // seconds on a large report (docs/PERFORMANCE.md, "Staging and deciding a report").
  const sequence = await db.query<{ name: string }>(
    `SELECT pg_get_serial_sequence('partner_records', 'id') AS name`,
  );
  await db.query(
    `CREATE TEMP TABLE rec_report ON COMMIT DROP AS
     SELECT s.line, s.reference, s.partner_reference, s.amount, s.currency, s.executed_at,
            s.settlement_amount, s.settlement_currency,
            ${IDENTITY_BASE} || '#1' AS identity,
            s.record_id,
            ${matched ? 'm.intent_id, m.completed AS intent_completed' : 'NULL::bigint AS intent_id, NULL::boolean AS intent_completed'}
       FROM (SELECT line, reference, partner_reference, amount, currency, settlement_amount, settlement_currency,
                    (timestamp 'epoch' + (executed_at_ms / 86400000) * interval '1 day'
                       + (executed_at_ms % 86400000) * interval '1 millisecond') AT TIME ZONE 'UTC' AS executed_at,
                    nextval($1::regclass) AS record_id
               FROM rec_staged) s
       ${matched ? 'LEFT JOIN rec_match m ON m.line = s.line' : ''}`,
    [sequence.rows[0].name],
  );
  await db.query('DROP TABLE rec_staged');
  // Every identity ends in `#1` here, so grouping identities groups bases.
  await db.query(
    `UPDATE rec_report r SET identity = left(d.identity, -1) || d.occurrence
       FROM (SELECT line, identity, row_number() OVER (PARTITION BY identity ORDER BY line) AS occurrence
               FROM rec_report
              WHERE identity IN (SELECT identity FROM rec_report GROUP BY identity HAVING count(*) > 1)) d
      WHERE r.line = d.line AND d.occurrence > 1`,
  );
  // For amount matching, which comes next (see prepareReport).
  if (!matched) await db.query('CREATE INDEX ON rec_report (currency, executed_at)');
  await db.query('ANALYZE rec_report');
}
