import type { Writable } from 'node:stream';
import type { DiscrepancySummary } from './discrepancyTypes.js';
import { writeChunk } from './writeChunk.js';

/** A discrepancy for machines: amounts as exact decimal strings, instants as ISO 8601 (UTC). */
export interface DiscrepancyJson {
  id: string;
  kind: string;
  partner: string;
  status: string;
  reference: string | null;
  partnerReference: string | null;
  amountAtRisk: string | null;
  currency: string | null;
  summary: string;
  assignee: string | null;
  intentId: string | null;
  runId: string | null;
  createdAt: string;
  updatedAt: string;
}

export function discrepancyJson(row: DiscrepancySummary): DiscrepancyJson {
  return {
    id: row.id,
    kind: row.kind,
    partner: row.partner,
    status: row.status,
    reference: row.reference,
    partnerReference: row.partnerReference,
    amountAtRisk: row.amountAtRisk,
    currency: row.currency,
    summary: row.summary,
    assignee: row.assignee,
    intentId: row.intentId,
    runId: row.runId,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The `--format json` shape: an array of {@link DiscrepancyJson}. */
export function discrepanciesJson(rows: readonly DiscrepancySummary[]): DiscrepancyJson[] {
  return rows.map(discrepancyJson);
}

/**
 * Streams a JSON array (one object per line) to `out` with backpressure, for exports too big to hold in
 * memory. Does not end `out`. Calls `onRow` after each row; returns how many rows were written.
 */
export async function writeDiscrepanciesJson(
  rows: AsyncIterable<DiscrepancySummary>,
  out: Writable,
  options: { onRow?: (written: number) => void } = {},
): Promise<number> {
  let written = 0;
  const write = (text: string) => writeChunk(out, text);
  await write('[');
  for await (const row of rows) {
    await write(`${written === 0 ? '\n' : ',\n'}${JSON.stringify(discrepancyJson(row))}`);
    written++;
    options.onRow?.(written);
  }
  await write(written === 0 ? ']\n' : '\n]\n');
  return written;
}
