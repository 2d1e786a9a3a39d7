import { spreadsheetText } from './spreadsheetText.js';
import { STYLE } from './xlsxStyles.js';

/**
 * The pieces of a worksheet part (`xl/worksheets/sheet1.xml`, ECMA-376 Part 1, 18.3): its opening up to
 * `<sheetData>`, one `<row>` at a time, and its end, so a sheet of any length is written as it is read.
 */

/** Excel's largest row number: 1,048,576 rows a sheet, the header included (its specifications and limits). */
export const MAX_SHEET_ROWS = 1_048_576;

/** Excel's longest cell: 32,767 characters (UTF-16 units, as Excel counts them). */
export const MAX_CELL_CHARACTERS = 32_767;

/** `A`, `B`, ... `Z`, `AA`: the letters of the 0-based column `index`. */
export function columnLetters(index: number): string {
  let letters = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26))
    letters = String.fromCharCode(65 + ((n - 1) % 26)) + letters;
  return letters;
}

/**
 * A text cell: an inline string (`t="inlineStr"`), never a formula and never typed by the reader, so
 * `=1+1`, `+5511987654321` or `000123` stay exactly those characters without any `'` in front.
 */
export function textCell(ref: string, value: string, style: number = STYLE.text): string {
  return `<c r="${ref}" s="${style}" t="inlineStr"><is><t xml:space="preserve">${spreadsheetText(value)}</t></is></c>`;
}

/** A number cell; `value` is a decimal or a JavaScript number's shortest text (xsd:double's lexical form). */
export function numberCell(ref: string, value: string | number, style: number): string {
  return `<c r="${ref}" s="${style}"><v>${value}</v></c>`;
}

/** One row (1-based `row`) of already-built cells. */
export function rowXml(row: number, cells: string[]): string {
  return `<row r="${row}">${cells.join('')}</row>`;
}

/**
 * Everything before the first row: the sheet view with the header row frozen (it stays in sight while
 * scrolling) and the columns' widths (in characters).
 */
export function sheetStart(widths: readonly number[]): string {
  const cols = widths
    .map((width, i) => `<col min="${i + 1}" max="${i + 1}" width="${width}" customWidth="1"/>`)
    .join('');
  return (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ' +
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">' +
    '<sheetViews><sheetView tabSelected="1" workbookViewId="0">' +
    '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>' +
    '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>' +
    `<sheetFormatPr defaultRowHeight="15"/><cols>${cols}</cols><sheetData>`
  );
}

/** The range `A1:N7` of `columns` columns and `rows` rows (header included). */
export function sheetRange(columns: number, rows: number): string {
  return `A1:${columnLetters(columns - 1)}${rows}`;
}

/** Everything after the last row: the autofilter on the header over every row (the ECMA order puts it here). */
export function sheetEnd(filterRange: string): string {
  return `</sheetData><autoFilter ref="${filterRange}"/></worksheet>`;
}
