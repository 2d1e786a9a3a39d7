import type { Queryable } from '../../database/queryable.js';
import type { DiscrepancyKind } from '../../shared/status.js';
import type { Json } from '../../shared/types.js';

export interface NewDiscrepancy {
  kind: DiscrepancyKind;
  partner: string;
  intentId: string | null;
  attempt: number | null;
  runId: string | null;
  reference: string | null;
  partnerReference: string | null;
  amountAtRisk: string | null;
  currency: string | null;
  /** One sentence a finance person understands without reading `details`. */
  summary: string;
  details: Json;
  /**
   * Identity of the problem, not of the observation: raising the same problem again (a re-run of the same
   * report, a retried late completion) finds this key taken and adds nothing.
   */
  dedupeKey: string;
  /** Who raised it, for the first history entry. */
  actor: string;
}

/**
 * Inserts a discrepancy and its first history entry in one statement; returns its id, or null when the
 * same problem (dedupe key) was already raised.
 *
 * Its intent, if any, is taken FOR KEY SHARE in the same statement, and a discrepancy for an intent that is
 * gone fails: what the foreign key did before migration 0020 (which explains why a reconciliation run,
 * raising thousands at once, relies on its partner's lock instead). A purge then skips the intent until
 * this commits, and sees the discrepancy after.
 */
export async function raiseDiscrepancy(db: Queryable, d: NewDiscrepancy): Promise<string | null> {
  const result = await db.query<{ id: string | null; intent_found: boolean }>(
    `WITH intent AS (
       SELECT id FROM intents WHERE id = $3::bigint FOR KEY SHARE
     ), raised AS (
       INSERT INTO discrepancies (kind, partner, intent_id, attempt, run_id, reference, partner_reference,
                                  amount_at_risk, currency, summary, details, dedupe_key)
       SELECT $1::text, $2::text, $3::bigint, $4::integer, $5::bigint, $6::text, $7::text, $8::numeric, $9::text,
              $10::text, $11::jsonb, $12::text
        WHERE $3::bigint IS NULL OR EXISTS (SELECT 1 FROM intent)
       ON CONFLICT ON CONSTRAINT discrepancies_dedupe_key_unique DO NOTHING
       RETURNING id
     ), history AS (
       INSERT INTO discrepancy_history (discrepancy_id, from_status, to_status, actor, note)
       SELECT id, NULL, 'open', $13, $10 FROM raised
     )
     SELECT (SELECT id FROM raised) AS id, $3::bigint IS NULL OR EXISTS (SELECT 1 FROM intent) AS intent_found`,
    [
      d.kind,
      d.partner,
      d.intentId,
      d.attempt,
      d.runId,
      d.reference,
      d.partnerReference,
      d.amountAtRisk,
      d.currency,
      d.summary,
      JSON.stringify(d.details),
      d.dedupeKey,
      d.actor,
    ],
  );
  const row = result.rows[0];
  if (!row.intent_found)
    throw new Error(`intent ${d.intentId} does not exist: the discrepancy was not raised`);
  return row.id;
}
