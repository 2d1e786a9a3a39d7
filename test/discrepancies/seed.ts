import type { Pool } from 'pg';
import { type NewDiscrepancy, raiseDiscrepancy } from '../../src/discrepancies/sql/raiseDiscrepancy.js';

let counter = 0;

/** Raises a discrepancy through the production SQL (with its first history row); returns its id. */
export async function raise(sql: Pool, overrides: Partial<NewDiscrepancy> = {}): Promise<string> {
  const n = ++counter;
  const id = await raiseDiscrepancy(sql, {
    kind: 'amount_mismatch',
    partner: 'acme-pay',
    intentId: null,
    attempt: null,
    runId: null,
    reference: `order-${n}`,
    partnerReference: `NSU-${n}`,
    amountAtRisk: '10.00',
    currency: 'BRL',
    summary: `discrepancy ${n}`,
    details: { n },
    dedupeKey: `test-${process.pid}-${n}-${Math.random()}`,
    actor: 'reconciler',
    ...overrides,
  });
  if (!id) throw new Error('raiseDiscrepancy found the dedupe key taken');
  return id;
}

/** Moves a discrepancy's creation time (for sorting, `since` and ageing), keeping `updated_at` in step. */
export async function setCreatedAt(sql: Pool, id: string, createdAt: Date | string): Promise<void> {
  await sql.query('UPDATE discrepancies SET created_at = $2, updated_at = $2 WHERE id = $1', [id, createdAt]);
}

/** A reconciliation run row; returns its id. */
export async function insertRun(
  sql: Pool,
  partner = 'acme-pay',
  source = 'settlement-2024-05-01.csv',
): Promise<string> {
  const result = await sql.query<{ id: string }>(
    `INSERT INTO reconciliation_runs (partner, trigger, source, status, started_at, finished_at)
     VALUES ($1, 'manual', $2, 'succeeded', '2024-05-02T03:00:00Z', '2024-05-02T03:00:05Z') RETURNING id`,
    [partner, source],
  );
  return result.rows[0].id;
}

/** A partner row as a reconciliation run records it; returns its id. */
export async function insertPartnerRecord(
  sql: Pool,
  row: {
    runId: string;
    line: number;
    reference: string | null;
    partnerReference: string | null;
    amount: string | null;
  },
): Promise<string> {
  const result = await sql.query<{ id: string }>(
    `INSERT INTO partner_records (partner, identity, run_id, line, reference, partner_reference, amount, currency,
                                  executed_at)
     VALUES ('acme-pay', $1, $2, $3, $4, $5, $6, 'BRL', '2024-05-01T10:00:00Z')
     RETURNING id`,
    [
      `identity-${row.runId}-${row.line}`,
      row.runId,
      row.line,
      row.reference,
      row.partnerReference,
      row.amount,
    ],
  );
  return result.rows[0].id;
}

/** `[{ id: ... }]` -> ids, for exact comparisons. */
export const idsOf = (rows: { id: string }[]): string[] => rows.map((row) => row.id);
