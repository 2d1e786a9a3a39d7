import type { Queryable } from '../database/queryable.js';
import { probeOrJoin, probesTable } from './probeOrJoin.js';
import { holdRun } from './sql/holdRun.js';

/** The columns of a stored record that the run reads back: what evidence and discrepancies show of it. */
export const RECORD_COLUMNS = [
  'id',
  'identity',
  'line',
  'run_id',
  'reference',
  'partner_reference',
  'amount',
  'currency',
  'executed_at',
] as const;

/**
 * Finds the rows of this report that some earlier run already stored (a re-run, overlapping reports), into
 * `rec_known`: the report's line and the stored record. Runs before anything of this run is stored, under
 * the partner's reconciliation lock, so it sees every record another run of this partner committed and no
 * run of this partner can store one meanwhile.
 *
 * Its plan: one probe of the unique (partner, identity) index per report row unless the table is of the
 * report's size ({@link probesTable}). partner_records holds every row of every report ever reconciled,
 * and the planner, left to itself, hashed all of it for a report a small fraction of its size
 * (docs/PERFORMANCE.md, "Cost independent of history").
 */
export async function findKnownRecords(db: Queryable, partner: string): Promise<number> {
  const records = probeOrJoin(
    await probesTable(db, 'partner_records', 'rec_report'),
    'partner_records',
    'pr',
    [...RECORD_COLUMNS, 'intent_id'],
    'pr.partner = $1 AND pr.identity = r.identity',
  );
  const known = await db.query(
    `CREATE TEMP TABLE rec_known ON COMMIT DROP AS
     SELECT r.line AS report_line, pr.id AS record_id, pr.identity, pr.line, pr.run_id, pr.reference,
            pr.partner_reference, pr.amount, pr.currency, pr.executed_at, pr.intent_id
       FROM rec_report r
       ${records}`,
    [partner],
  );
  await db.query('ANALYZE rec_known');
  return known.rowCount ?? 0;
}

/**
 * SQL: report row `alias` is not in `rec_known`, or nothing when no row is (every first run of a report).
 * Against an empty table PostgreSQL still plans an anti join and rescans it for every row, which is
 * measurable on a large report (docs/PERFORMANCE.md, "Staging and deciding a report").
 */
export function notKnown(alias: string, knownRows: number): string {
  return knownRows === 0
    ? 'true'
    : `NOT EXISTS (SELECT 1 FROM rec_known k WHERE k.report_line = ${alias}.line)`;
}

/**
 * Remembers every accepted row in `partner_records` under its identity, with the intent it matched. A row
 * some earlier run already stored (`rec_known`, see {@link findKnownRecords}) is left as it was: that is what
 * makes re-runs change nothing. Done before any decision, so discrepancies can point at the records behind
 * them. Each new record takes the id its row drew in identifyRows (`rec_report.record_id`), so later steps
 * (collectNewEvidence, flagOrphans) find it from the report's own tables: nothing is read back from
 * `partner_records`, where the planner knows nothing yet of the rows just written, and nothing is returned
 * (`RETURNING` into a table of new records, and the sort that kept ids in line order, cost more than
 * drawing the ids: see identifyRows). Returns how many rows were new.
 *
 * A plain INSERT of the rows not in `rec_known`, not `INSERT ... ON CONFLICT DO NOTHING` of all of them:
 * the speculative insertion behind ON CONFLICT costs about as much as inserting again (docs/PERFORMANCE.md,
 * "Staging and deciding a report") and can no longer find anything, since runs of a
 * partner are serialised and `rec_known` was read under that lock. The unique index still guards against
 * the impossible: a duplicate would fail the run, which then applies nothing.
 *
 * The run row is held first, once ({@link holdRun}): it cannot be deleted before the records pointing at it
 * are committed (migration 0003 explains why there is no foreign key checking that per row).
 */
export async function storePartnerRecords(
  db: Queryable,
  input: { partner: string; runId: string; knownRows: number },
): Promise<number> {
  await holdRun(db, input.runId);
  const stored = await db.query(
    `INSERT INTO partner_records (id, partner, identity, run_id, line, reference, partner_reference, amount, currency,
                                  executed_at, intent_id, settlement_amount, settlement_currency)
     OVERRIDING SYSTEM VALUE
     SELECT r.record_id, $1, r.identity, $2, r.line, r.reference, r.partner_reference, r.amount, r.currency,
            r.executed_at, r.intent_id, r.settlement_amount, r.settlement_currency
       FROM rec_report r
      WHERE ${notKnown('r', input.knownRows)}`,
    [input.partner, input.runId],
  );
  return stored.rowCount ?? 0;
}
