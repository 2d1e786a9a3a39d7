import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { amountCell, MUST_QUOTE, neutraliseCell } from './csvCells.js';
import type { DiscrepancySummary } from './discrepancyTypes.js';

/**
 * The CSV exports' field separators: `comma` (the default) or `semicolon`, which spreadsheets in
 * comma-decimal locales (pt-BR, de-DE, fr-FR...) expect when they open a file.
 */
const CSV_SEPARATORS = { comma: ',', semicolon: ';' } as const;
export type CsvSeparator = keyof typeof CSV_SEPARATORS;

export function isCsvSeparator(value: unknown): value is CsvSeparator {
  return typeof value === 'string' && Object.hasOwn(CSV_SEPARATORS, value);
}

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

/**
 * The decimal mark of the amounts in each export: the `;` export is for comma-decimal locales, whose
 * spreadsheets read `12,345` as 12.345 (and `12.345` as 12345).
 */
const DECIMAL_MARKS = { comma: '.', semicolon: ',' } as const;

/** One CSV record: every cell is a string, already neutralised. */
function csvRecord(row: DiscrepancySummary, decimalMark: '.' | ','): string[] {
  const text = (value: string | null) => (value === null ? '' : neutraliseCell(value));
  return [
    text(row.id),
    text(row.kind),
    text(row.partner),
    text(row.status),
    text(row.reference),
    text(row.partnerReference),
    amountCell(row.amountAtRisk, decimalMark),
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
 * Writes discrepancies as CSV, the export for programs (for people in a spreadsheet, the XLSX export: a
 * spreadsheet opening a CSV guesses every cell's type, so a reference such as `000123` or
 * `8815934509271234` may come back as a number). UTF-8 with a BOM (so accents survive), a header row,
 * CRLF line ends, `,` or `;` between fields (`separator`, default `comma`), amounts as the exact decimals
 * stored (with a decimal comma in the `;` export: `-12,50`), instants as ISO 8601 UTC. Partner data is untrusted: in every
 * free-text cell, the start and every place after a line break, `,` or `;` that begins with a formula
 * character get a `'` in front ({@link neutraliseCell}); every cell holding a line break (bare LF and CR
 * included), a quote, `,` or `;` is quoted whichever separator is chosen ({@link MUST_QUOTE}); amounts are
 * plain validated decimals and are written as numbers, so `-5.00` stays `-5.00` ({@link amountCell}).
 *
 * Streams with backpressure (memory stays flat for millions of rows). Ends `out` unless `end: false` (pass
 * that for `process.stdout`). Calls `onRow` after each row; returns how many rows were written.
 */
export async function writeDiscrepanciesCsv(
  rows: AsyncIterable<DiscrepancySummary>,
  out: Writable,
  options: { end?: boolean; onRow?: (written: number) => void; separator?: CsvSeparator } = {},
): Promise<number> {
  let written = 0;
  const separator = options.separator ?? 'comma';
  async function* records() {
    for await (const row of rows) {
      yield csvRecord(row, DECIMAL_MARKS[separator]);
      written++;
      options.onRow?.(written);
    }
  }
  const stringifier = stringify({
    bom: true,
    header: true,
    columns: [...CSV_COLUMNS],
    record_delimiter: 'windows',
    delimiter: CSV_SEPARATORS[separator],
    // csv-stringify quotes only cells holding its own record delimiter (CR LF) or separator; a bare LF or
    // CR, or the other separator, would go out unquoted and start a new row or cell in a spreadsheet.
    quoted_match: MUST_QUOTE,
  });
  await pipeline(Readable.from(records()), stringifier, out, { end: options.end ?? true });
  return written;
}
