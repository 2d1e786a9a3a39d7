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
 */
export async function raiseDiscrepancy(db: Queryable, d: NewDiscrepancy): Promise<string | null> {
  const result = await db.query<{ id: string }>(
    `WITH raised AS (
       INSERT INTO discrepancies (kind, partner, intent_id, attempt, run_id, reference, partner_reference,
                                  amount_at_risk, currency, summary, details, dedupe_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::numeric, $9, $10, $11::jsonb, $12)
       ON CONFLICT ON CONSTRAINT discrepancies_dedupe_key_unique DO NOTHING
       RETURNING id
     ), history AS (
       INSERT INTO discrepancy_history (discrepancy_id, from_status, to_status, actor, note)
       SELECT id, NULL, 'open', $13, $10 FROM raised
     )
     SELECT id FROM raised`,
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
  return result.rows[0]?.id ?? null;
}
