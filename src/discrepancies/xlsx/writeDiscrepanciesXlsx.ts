import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { DiscrepancySummary } from '../discrepancyTypes.js';
import { XlsxLimitError } from '../errors/XlsxLimitError.js';
import { CSV_COLUMNS } from '../writeDiscrepanciesCsv.js';
import { excelSerial } from './excelSerial.js';
import {
  columnLetters,
  MAX_CELL_CHARACTERS,
  MAX_SHEET_ROWS,
  numberCell,
  rowXml,
  sheetEnd,
  sheetRange,
  sheetStart,
  textCell,
} from './sheetXml.js';
import {
  CONTENT_TYPES_XML,
  ROOT_RELATIONSHIPS_XML,
  WORKBOOK_RELATIONSHIPS_XML,
  workbookXml,
  XLSX_PARTS,
} from './workbookParts.js';
import { xlsxAmount } from './xlsxAmount.js';
import { STYLE, STYLES_XML } from './xlsxStyles.js';
import { ZipStream } from './zipStream.js';

type Column = (typeof CSV_COLUMNS)[number];

/** The header row: the CSV's column names, the two instants saying they are in UTC. */
const HEADER: Record<Column, string> = {
  ...(Object.fromEntries(CSV_COLUMNS.map((name) => [name, name])) as Record<Column, string>),
  createdAt: 'createdAt (UTC)',
  updatedAt: 'updatedAt (UTC)',
};

/** Column widths in characters, in CSV_COLUMNS order. */
const WIDTHS: Record<Column, number> = {
  id: 9,
  kind: 24,
  partner: 16,
  status: 13,
  reference: 24,
  partnerReference: 24,
  amountAtRisk: 15,
  currency: 9,
  summary: 60,
  assignee: 18,
  intentId: 10,
  runId: 9,
  createdAt: 20,
  updatedAt: 20,
};

/** Each column's letter: `id` is A, `updatedAt` N. */
const LETTER = Object.fromEntries(CSV_COLUMNS.map((name, i) => [name, columnLetters(i)])) as Record<
  Column,
  string
>;

/** An id (a `bigint` as text) a double holds: a number cell, so ids sort as numbers. */
const SMALL_INTEGER = /^\d{1,15}$/;

/** Rows are gathered into pieces of about this many characters before going to the compressor. */
const PIECE = 64 * 1024;

/**
 * Writes discrepancies as an XLSX workbook (Office Open XML SpreadsheetML, one sheet), the export for
 * people who open it in a spreadsheet: unlike a CSV, whose cells every spreadsheet types by guessing,
 * each cell here has its type.
 *
 * - Columns: {@link CSV_COLUMNS}, header row frozen, with an autofilter.
 * - Free text (kind, partner, status, reference, partnerReference, currency, summary, assignee): text cells
 *   (inline strings) with the exact characters, so `000123`, `8815934509271234`, `2025-03-10`, `TRUE`,
 *   `(123)` stay text and `=1+1` or `+5511987654321` is never a formula and needs no `'` in front;
 *   characters XML cannot carry are written `_xHHHH_` (spreadsheetText.ts).
 * - amountAtRisk: a number cell shown with the currency's ISO 4217 minor units, or a text cell with the
 *   exact decimal when a double would round it (more than 15 significant digits): see {@link xlsxAmount}.
 * - id, intentId, runId: number cells (whole numbers).
 * - createdAt, updatedAt: date-time cells in UTC (`yyyy-mm-dd hh:mm:ss`, the value to the millisecond).
 * - A null or empty value is an empty cell.
 *
 * Refuses ({@link XlsxLimitError}) rather than cuts: a text longer than Excel's 32,767 characters a cell
 * (Excel would truncate it or call the file corrupt), or more rows than Excel's 1,048,576 a sheet; the
 * message names the discrepancy and column and points to the CSV and JSON exports, which keep everything.
 * The workbook is then left incomplete (no ZIP central directory), so no spreadsheet opens it as whole.
 *
 * Streams with backpressure through {@link ZipStream}: memory stays flat for a million rows. Ends `out`
 * unless `end: false`. Calls `onRow` after each row; returns how many rows were written.
 */
export async function writeDiscrepanciesXlsx(
  rows: AsyncIterable<DiscrepancySummary>,
  out: Writable,
  options: { end?: boolean; onRow?: (written: number) => void; modifiedAt?: Date } = {},
): Promise<number> {
  const zip = new ZipStream(out, { modifiedAt: options.modifiedAt });
  await zip.addEntry(XLSX_PARTS.contentTypes, CONTENT_TYPES_XML);
  await zip.addEntry(XLSX_PARTS.rootRelationships, ROOT_RELATIONSHIPS_XML);
  await zip.addEntry(XLSX_PARTS.workbookRelationships, WORKBOOK_RELATIONSHIPS_XML);
  await zip.addEntry(XLSX_PARTS.styles, STYLES_XML);
  let written = 0;
  async function* sheet(): AsyncGenerator<string> {
    let piece =
      sheetStart(CSV_COLUMNS.map((name) => WIDTHS[name])) +
      rowXml(
        1,
        CSV_COLUMNS.map((name) => textCell(`${LETTER[name]}1`, HEADER[name], STYLE.header)),
      );
    for await (const row of rows) {
      if (written + 1 >= MAX_SHEET_ROWS)
        throw new XlsxLimitError(
          `the XLSX export holds at most ${MAX_SHEET_ROWS - 1} discrepancies (Excel's ${MAX_SHEET_ROWS} rows a sheet, ` +
            'the header included); narrow the filter or export CSV or JSON',
        );
      piece += rowXml(written + 2, rowCells(row, written + 2));
      written++;
      options.onRow?.(written);
      if (piece.length >= PIECE) {
        yield piece;
        piece = '';
      }
    }
    yield piece + sheetEnd(sheetRange(CSV_COLUMNS.length, written + 1));
  }
  await zip.addEntry(XLSX_PARTS.sheet, sheet());
  await zip.addEntry(XLSX_PARTS.workbook, workbookXml(sheetRange(CSV_COLUMNS.length, written + 1)));
  await zip.finish();
  if (options.end ?? true) {
    out.end();
    await finished(out, { readable: false });
  }
  return written;
}

/** The cells of one discrepancy on sheet row `line`. */
function rowCells(row: DiscrepancySummary, line: number): string[] {
  const cells: string[] = [];
  const ref = (name: Column) => `${LETTER[name]}${line}`;
  const text = (name: Column, value: string | null) => {
    if (value === null || value === '') return;
    if (value.length > MAX_CELL_CHARACTERS)
      throw new XlsxLimitError(
        `discrepancy ${row.id}: ${name} is ${value.length} characters, more than the ${MAX_CELL_CHARACTERS} ` +
          'an Excel cell holds; nothing was cut: export CSV or JSON, which keep it whole, or filter it out',
      );
    cells.push(textCell(ref(name), value));
  };
  const id = (name: Column, value: string | null) => {
    if (value === null || value === '') return;
    if (SMALL_INTEGER.test(value)) cells.push(numberCell(ref(name), value, STYLE.integer));
    else text(name, value);
  };
  const instant = (name: Column, value: Date | null) => {
    if (value !== null) cells.push(numberCell(ref(name), excelSerial(value), STYLE.dateTime));
  };
  // In CSV_COLUMNS order: a row's cells must go left to right.
  id('id', row.id);
  text('kind', row.kind);
  text('partner', row.partner);
  text('status', row.status);
  text('reference', row.reference);
  text('partnerReference', row.partnerReference);
  const amount = xlsxAmount(row.amountAtRisk, row.currency);
  if (amount?.kind === 'number') cells.push(numberCell(ref('amountAtRisk'), amount.value, amount.style));
  else if (amount?.kind === 'text') text('amountAtRisk', amount.value);
  text('currency', row.currency);
  text('summary', row.summary);
  text('assignee', row.assignee);
  id('intentId', row.intentId);
  id('runId', row.runId);
  instant('createdAt', row.createdAt);
  instant('updatedAt', row.updatedAt);
  return cells;
}
