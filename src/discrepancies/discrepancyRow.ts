import type { DiscrepancyKind, DiscrepancyStatus } from '../shared/status.js';
import type { DiscrepancySummary } from './discrepancyTypes.js';

/** `discrepancies` as PostgreSQL returns it: bigint and numeric arrive as strings (exact money). */
export interface DiscrepancyRow {
  id: string;
  kind: DiscrepancyKind;
  partner: string;
  status: DiscrepancyStatus;
  reference: string | null;
  partner_reference: string | null;
  amount_at_risk: string | null;
  currency: string | null;
  summary: string;
  assignee: string | null;
  intent_id: string | null;
  run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns of a {@link DiscrepancySummary}, for `SELECT ... FROM discrepancies d`. */
export const SUMMARY_COLUMNS = `d.id, d.kind, d.partner, d.status, d.reference, d.partner_reference,
  d.amount_at_risk::text AS amount_at_risk, d.currency, d.summary, d.assignee, d.intent_id, d.run_id,
  d.created_at, d.updated_at`;

export function toSummary(row: DiscrepancyRow): DiscrepancySummary {
  return {
    id: row.id,
    kind: row.kind,
    partner: row.partner,
    status: row.status,
    reference: row.reference,
    partnerReference: row.partner_reference,
    amountAtRisk: row.amount_at_risk,
    currency: row.currency,
    summary: row.summary,
    assignee: row.assignee,
    intentId: row.intent_id,
    runId: row.run_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
