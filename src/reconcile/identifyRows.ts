import type { Queryable } from '../database/queryable.js';
import { candidateColumns } from './candidateColumns.js';
import { probeOrJoin, probesTable } from './probeOrJoin.js';

/**
 * SQL: the identity of staged row `s` without its occurrence number (see {@link identifyRows}). Migration
 * 0007 rewrote the identities stored before with this same expression, and 0019 over identifiers trimmed as
 * reports are now read (src/shared/identifierText.ts): keep them in step.
 */
export const IDENTITY_BASE = `COALESCE(s.partner_reference || '|' || COALESCE(s.reference, ''),
         'ref:' || COALESCE(s.reference, '') || '|' ||
         COALESCE(to_char(s.executed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), ''))`;

/** The columns of a `rec_report` row that come from the report itself, in the table's order. */
export const REPORT_ROW_COLUMNS = [
  'line',
  'reference',
  'partner_reference',
  'amount',
  'currency',
  'executed_at',
  'settlement_amount',
  'settlement_currency',
  'identity',
  'record_id',
] as const;

/** How identifyRows pairs each staged row with the partner's intents it could be an execution of. */
export interface ReferenceCandidates {
  partner: string;
  /** The intents' column that must equal the row's: `reference` or `partner_reference`. */
  column: 'reference' | 'partner_reference';
  clockSkewMs: number;
}

/** What identifyRows built: `rec_report`'s rows, and the staged rows they came from. */
export interface IdentifiedRows {
  rows: number;
  staged: number;
}

/**
 * Turns the staged rows into `rec_report`, the table every later step reads: each row gets its identity,
 * the key under which `partner_records` remembers it across runs, so a re-run of the same report finds
 * its rows already there, and its intent (`intent_id`, and `intent_completed`, whether that intent was
 * completed when matched). Under amount matching (`candidates` null) the intent is null until
 * matchReportByAmount writes it. Under reference matching each row is joined here with every intent of the
 * partner whose reference (or partner reference) is the row's: `rec_report` then holds one row per (row,
 * candidate), with the candidate columns DECIDE reads (`completed`, `pinned`, `excluded`, `dead`,
 * matchRows.ts), and a row without candidates once. matchReferenceCandidates decides from them: when no row
 * has two candidates (`rows` equals `staged`) the candidates are the matches and the table is already the
 * report. Matching and identifying were two passes over the report before, each joined to the other's
 * table (docs/PERFORMANCE.md, "Matching and identifying in one pass (stop 26)").
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
 * together faster than the sort alone. The identities are the same. Numbered by `dense_rank`, so that the
 * candidate rows of one line (under reference matching, before DECIDE) share its number.
 *
 * Each row also draws its `partner_records` id here (`record_id`), whether or not it turns out to be new:
 * storePartnerRecords then inserts with these ids instead of materialising what `RETURNING` gives back, and
 * later steps find a new row's record by its line. Drawn in the scan of the staging table, which holds the
 * rows in line order (COPY appends them so), in a subquery PostgreSQL cannot flatten (a volatile function
 * in its select list), before any join: a row's candidates share its id, and ids follow lines, as the
 * review page's "in id order" expects. A known row's id is simply never used (the sequence has gaps
 * anyway); drawing it costs less than the `RETURNING` table and the sort that gave ids in line order cost
 * together.
 *
 * The candidate intents are read by one index probe per row when the report is small beside the ledger's
 * intents, by a join when they are of a size ({@link probesTable}). Left to the planner, it hashed
 * every intent of the partner, history included, for a report a small fraction of their size: a run's cost
 * then grew with the ledger's age (docs/PERFORMANCE.md, "Cost independent of history").
 *
 * Indexes are created after loading, only those later steps use: none for reference and partner-reference
 * matching (every join on this table is a hash join, and a line or reference index only cost time), the
 * (currency, executed_at) one for amount matching. The table is ANALYZEd, since autovacuum never analyzes
 * temp tables and the planner would otherwise guess its size.
 *
 * Figures for each of these choices: docs/PERFORMANCE.md, "Staging and deciding a report".
 */
export async function identifyRows(
  db: Queryable,
  candidates: ReferenceCandidates | null,
): Promise<IdentifiedRows> {
  // Looked up once: as an argument of nextval it would be resolved again for every row, which costs
  // seconds on a large report (docs/PERFORMANCE.md, "Staging and deciding a report").
  const sequence = await db.query<{ name: string }>(
    `SELECT pg_get_serial_sequence('partner_records', 'id') AS name`,
  );
  let staged = 0;
  let intents = '';
  if (candidates !== null) {
    // What tells matchReferenceCandidates whether any row found two candidates.
    staged = (await db.query<{ rows: number }>('SELECT count(*)::int AS rows FROM rec_staged')).rows[0].rows;
    // Autovacuum never analyzes temp tables: without this the planner guesses the report's size from its
    // pages, and whether to probe intents' index once per row or hash the partner's intents hinges on it.
    await db.query('ANALYZE rec_staged');
    intents = probeOrJoin(
      await probesTable(db, 'intents', 'rec_staged'),
      'intents',
      'i',
      ['id', 'partner_reference', 'created_at', 'status'],
      `i.partner = $2 AND i.${candidates.column} = s.${candidates.column}`,
      { left: true },
    );
  }
  const identified = await db.query(
    `CREATE TEMP TABLE rec_report ON COMMIT DROP AS
     SELECT ${REPORT_ROW_COLUMNS.map((column) => `s.${column}`).join(', ')},
            ${
              candidates === null
                ? 'NULL::bigint AS intent_id, NULL::boolean AS intent_completed'
                : `i.id AS intent_id, ${candidateColumns('s', 's.executed_at', '$3')}`
            }
       FROM (SELECT s.*, ${IDENTITY_BASE} || '#1' AS identity
               FROM (SELECT line, reference, partner_reference, amount, currency, settlement_amount,
                            settlement_currency,
                            (timestamp 'epoch' + (executed_at_ms / 86400000) * interval '1 day'
                               + (executed_at_ms % 86400000) * interval '1 millisecond') AT TIME ZONE 'UTC'
                              AS executed_at,
                            nextval($1::regclass) AS record_id
                       FROM rec_staged) s) s
       ${intents}`,
    candidates === null
      ? [sequence.rows[0].name]
      : [sequence.rows[0].name, candidates.partner, candidates.clockSkewMs],
  );
  await db.query('DROP TABLE rec_staged');
  // Every identity ends in `#1` here, so grouping identities groups bases.
  await db.query(
    `UPDATE rec_report r SET identity = left(d.identity, -1) || d.occurrence
       FROM (SELECT line, identity, dense_rank() OVER (PARTITION BY identity ORDER BY line) AS occurrence
               FROM rec_report
              WHERE identity IN (SELECT identity FROM rec_report GROUP BY identity HAVING count(*) > 1)) d
      WHERE r.line = d.line AND d.occurrence > 1`,
  );
  // For amount matching, which comes next (see prepareReport).
  if (candidates === null) await db.query('CREATE INDEX ON rec_report (currency, executed_at)');
  await db.query('ANALYZE rec_report');
  const rows = identified.rowCount ?? 0;
  return { rows, staged: candidates === null ? rows : staged };
}
