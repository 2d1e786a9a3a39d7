import type { Queryable } from '../sql/queryable.js';

/**
 * Remembers every accepted row in `partner_records` under its identity, with the intent it matched. A row
 * some earlier run already stored (a re-run, overlapping reports) is left as it was (`ON CONFLICT DO
 * NOTHING`): that is what makes re-runs change nothing. Done before any decision, so discrepancies can
 * point at the records behind them. Returns how many rows were new.
 */
export async function storePartnerRecords(
  db: Queryable,
  input: { partner: string; runId: string; source: string },
): Promise<number> {
  const result = await db.query(
    `INSERT INTO partner_records (partner, identity, run_id, source, line, reference, partner_reference, amount,
                                  currency, executed_at, intent_id)
     SELECT $1, r.identity, $2, $3, r.line, r.reference, r.partner_reference, r.amount, r.currency, r.executed_at,
            m.intent_id
       FROM rec_report r
       LEFT JOIN rec_match m ON m.line = r.line
      ORDER BY r.line
     ON CONFLICT ON CONSTRAINT partner_records_identity_unique DO NOTHING`,
    [input.partner, input.runId, input.source],
  );
  return result.rowCount ?? 0;
}
