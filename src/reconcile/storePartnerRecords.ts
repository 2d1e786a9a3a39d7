import type { Queryable } from '../sql/queryable.js';

/**
 * Finds the rows of this report that some earlier run already stored (a re-run, overlapping reports), into
 * `rec_known`: the report's line and the stored record. Runs before anything of this run is stored, under
 * the partner's reconciliation lock, so it sees every record another run of this partner committed and no
 * run of this partner can store one meanwhile.
 */
export async function findKnownRecords(db: Queryable, partner: string): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_known ON COMMIT DROP AS
     SELECT r.line AS report_line, pr.id AS record_id, pr.identity, pr.line, pr.run_id, pr.source, pr.reference,
            pr.partner_reference, pr.amount, pr.currency, pr.executed_at, pr.intent_id
       FROM rec_report r
       JOIN partner_records pr ON pr.partner = $1 AND pr.identity = r.identity`,
    [partner],
  );
  await db.query('ANALYZE rec_known');
}

/**
 * Remembers every accepted row in `partner_records` under its identity, with the intent it matched. A row
 * some earlier run already stored (`rec_known`, see {@link findKnownRecords}) is left as it was: that is what
 * makes re-runs change nothing. Done before any decision, so discrepancies can point at the records behind
 * them. The new records (id, line, intent and values) go into `rec_stored`, for collectNewEvidence and
 * flagOrphans, which would otherwise read them back from `partner_records`, where the planner knows
 * nothing yet of the rows just written. Returns how many rows were new.
 *
 * A plain INSERT of the rows not in `rec_known`, not `INSERT ... ON CONFLICT DO NOTHING` of all of them:
 * the speculative insertion behind ON CONFLICT costs as much as inserting again (1M acme-pay rows with
 * 0002's schema: 46-58 s with it, 33-37 s without) and can no longer find anything, since runs of a
 * partner are serialised and `rec_known` was read under that lock. The unique index still guards against
 * the impossible: a duplicate would fail the run, which then applies nothing.
 *
 * The run row is taken FOR KEY SHARE first, once: it cannot be deleted before the records pointing at it
 * are committed (migration 0003 explains why there is no foreign key checking that per row).
 */
export async function storePartnerRecords(
  db: Queryable,
  input: { partner: string; runId: string; source: string },
): Promise<number> {
  const run = await db.query('SELECT 1 FROM reconciliation_runs WHERE id = $1 FOR KEY SHARE', [input.runId]);
  if (run.rowCount !== 1) throw new Error(`reconciliation run ${input.runId} does not exist`);
  const stored = await db.query(
    `CREATE TEMP TABLE rec_stored ON COMMIT DROP AS
     WITH stored AS (
       INSERT INTO partner_records (partner, identity, run_id, source, line, reference, partner_reference, amount,
                                    currency, executed_at, intent_id)
       SELECT $1, r.identity, $2, $3, r.line, r.reference, r.partner_reference, r.amount, r.currency, r.executed_at,
              m.intent_id
         FROM rec_report r
         LEFT JOIN rec_match m ON m.line = r.line
        WHERE NOT EXISTS (SELECT 1 FROM rec_known k WHERE k.report_line = r.line)
        ORDER BY r.line
       RETURNING id AS record_id, identity, line, reference, partner_reference, amount, currency, executed_at,
                 intent_id
     )
     SELECT * FROM stored`,
    [input.partner, input.runId, input.source],
  );
  return stored.rowCount ?? 0;
}
