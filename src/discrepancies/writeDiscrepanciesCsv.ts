import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { amountCell, neutraliseCell } from './csvCells.js';
import type { DiscrepancySummary } from './discrepancyTypes.js';

/** Columns of the CSV export, in order; the header row uses these names (same as the JSON keys). */
export const CSV_COLUMNS = [
  'id',
  'kind',
  'partner',
  'status',
  'reference',
  'partnerReference',
  'amountAtRisk',
  'currency',
  'summary',
  'assignee',
  'intentId',
  'runId',
  'createdAt',
  'updatedAt',
] as const;

/** One CSV record: every cell is a string, already neutralised. */
function csvRecord(row: DiscrepancySummary): string[] {
  const text = (value: string | null) => (value === null ? '' : neutraliseCell(value));
  return [
    text(row.id),
    text(row.kind),
    text(row.partner),
    text(row.status),
    text(row.reference),
    text(row.partnerReference),
    amountCell(row.amountAtRisk),
    text(row.currency),
    text(row.summary),
    text(row.assignee),
    text(row.intentId),
    text(row.runId),
    row.createdAt.toISOString(),
    row.updatedAt.toISOString(),
  ];
}

/**
 * Writes discrepancies as CSV that opens correctly in Excel: UTF-8 with a BOM (so accents survive), a
 * header row, CRLF line ends, quoting by csv-stringify, amounts as the exact decimals stored, instants as
 * ISO 8601 UTC. Partner data is untrusted: every free-text cell starting with `=`, `+`, `-`, `@`, tab or
 * carriage return is prefixed with `'` ({@link neutraliseCell}); amounts are plain validated decimals and
 * are written as numbers, so `-5.00` stays `-5.00` ({@link amountCell}).
 *
 * Streams with backpressure (memory stays flat for millions of rows). Ends `out` unless `end: false` (pass
 * that for `process.stdout`). Calls `onRow` after each row; returns how many rows were written.
 */
export async function writeDiscrepanciesCsv(
  rows: AsyncIterable<DiscrepancySummary>,
  out: Writable,
  options: { end?: boolean; onRow?: (written: number) => void } = {},
): Promise<number> {
  let written = 0;
  async function* records() {
    for await (const row of rows) {
      yield csvRecord(row);
      written++;
      options.onRow?.(written);
    }
  }
  const stringifier = stringify({
    bom: true,
    header: true,
    columns: [...CSV_COLUMNS],
    record_delimiter: 'windows',
  });
  await pipeline(Readable.from(records()), stringifier, out, { end: options.end ?? true });
  return written;
}
