import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';

/** Debian's LibreOffice (`apt-get install -y libreoffice-calc`; `.ci/run` installs it). SOFFICE points elsewhere. */
export const SOFFICE = process.env.SOFFICE ?? '/usr/bin/soffice';

export function hasSoffice(): boolean {
  return existsSync(SOFFICE);
}

/** One cell as LibreOffice Calc read it: its type, its text (paragraphs joined by `\n`), formula if any. */
export interface CalcCell {
  /** `office:value-type`: `string`, `float`, `date`...; `empty` for a cell with nothing in it. */
  type: string;
  text: string;
  /** `office:value` of a number cell (`-12.5`). */
  value?: string;
  /** `office:date-value` of a date cell (`2025-03-10T12:34:56.79`: Calc writes it to the 1/100 s). */
  dateValue?: string;
  /** `table:formula`: present only when Calc turned the cell into a formula. */
  formula?: string;
}

const execFileAsync = promisify(execFile);

/** A CSV file as Calc opened it: the cells, and the raw flat XML (to look for formulas without parsing). */
export interface CalcSheet {
  rows: CalcCell[][];
  xml: string;
}

/**
 * Opens `csv` in LibreOffice Calc headless with the CSV import filter's options (`separator` as a
 * character: `,` or `;`; text delimiter `"`, UTF-8, from line 1; `language`, the Windows LCID of the locale
 * whose number format the import uses, e.g. 1046 for pt-BR, as a person in that locale gets it; otherwise
 * Calc's defaults, as a person opening the file gets them), saves it as flat OpenDocument (`.fods`, plain
 * XML) and reads every cell back: rows of {@link CalcCell}, trailing empty cells dropped.
 */
export async function openInCalc(
  csv: Buffer,
  separator: ',' | ';',
  options: { language?: number } = {},
): Promise<CalcSheet> {
  const dir = mkdtempSync(join(tmpdir(), 'calc-'));
  try {
    const input = join(dir, 'export.csv');
    writeFileSync(input, csv);
    const infilter = `CSV:${separator.charCodeAt(0)},34,76,1${options.language ? `,,${options.language}` : ''}`;
    await convert(dir, input, 'fods', infilter);
    const xml = readFileSync(join(dir, 'export.fods'), 'utf8');
    return { rows: parseFods(xml), xml };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An XLSX workbook as Calc opened it: its cells, its flat XML, and each cell's text as Calc holds it. */
export interface CalcWorkbook extends CalcSheet {
  /**
   * Every cell's text as Calc exports it to CSV (UTF-8): unlike `.fods`, which is XML and drops the control
   * characters XML cannot carry, this keeps them, so a cell's exact characters can be compared.
   */
  texts: string[][];
}

/**
 * Opens `xlsx` in LibreOffice Calc headless, as a person opening the file gets it, and reads it back twice:
 * saved as `.fods` for each cell's type and value ({@link CalcCell}), and as CSV (`,`, `"`, UTF-8) for each
 * cell's exact text ({@link CalcWorkbook.texts}).
 */
export async function openXlsxInCalc(xlsx: Buffer): Promise<CalcWorkbook> {
  const dir = mkdtempSync(join(tmpdir(), 'calc-xlsx-'));
  try {
    const input = join(dir, 'export.xlsx');
    writeFileSync(input, xlsx);
    await convert(dir, input, 'fods');
    // 44 `,`, 34 `"`, 76 UTF-8, 1 from line 1; then the CSV export's defaults.
    await convert(dir, input, 'csv:Text - txt - csv (StarCalc):44,34,76,1');
    const xml = readFileSync(join(dir, 'export.fods'), 'utf8');
    const texts: string[][] = parse(readFileSync(join(dir, 'export.csv')), { relax_column_count: true });
    return { rows: parseFods(xml), xml, texts };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs soffice headless on `input` in `dir`, converting it to `target` (a format, optionally with its filter). */
async function convert(dir: string, input: string, target: string, infilter?: string): Promise<void> {
  await execFileAsync(
    SOFFICE,
    [
      // A profile of its own: a user's or another test's running soffice would otherwise take the job.
      `-env:UserInstallation=file://${join(dir, 'profile')}`,
      '--headless',
      ...(infilter ? [`--infilter=${infilter}`] : []),
      '--convert-to',
      target,
      '--outdir',
      dir,
      input,
    ],
    { timeout: 120_000 },
  );
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, name: string) => {
    if (name.startsWith('#x') || name.startsWith('#X'))
      return String.fromCodePoint(Number.parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(Number(name.slice(1)));
    return ENTITIES[name] ?? whole;
  });
}

function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return match ? decode(match[1]) : undefined;
}

/** A paragraph's text: `<text:s text:c="n"/>` spaces, `<text:tab/>`, `<text:line-break/>`, spans unwrapped. */
function paragraphText(inner: string): string {
  return decode(
    inner
      .replace(/<text:s(?:\s+text:c="(\d+)")?\s*\/>/g, (_, n?: string) => ' '.repeat(n ? Number(n) : 1))
      .replace(/<text:tab\s*\/>/g, '\t')
      .replace(/<text:line-break\s*\/>/g, '\n')
      .replace(/<[^>]+>/g, ''),
  );
}

/** The cells of the first sheet of a flat OpenDocument spreadsheet. */
function parseFods(xml: string): CalcCell[][] {
  const rows: CalcCell[][] = [];
  const rowPattern = /<table:table-row\b[^>]*?(?:\/>|>([\s\S]*?)<\/table:table-row>)/g;
  const cellPattern =
    /<table:(?:covered-)?table-cell\b([^>]*?)(?:\/>|>([\s\S]*?)<\/table:(?:covered-)?table-cell>)/g;
  const sheet = /<table:table\b[\s\S]*?<\/table:table>/.exec(xml)?.[0] ?? '';
  for (const rowMatch of sheet.matchAll(rowPattern)) {
    const repeatRows = Number(
      attribute(rowMatch[0].slice(0, rowMatch[0].indexOf('>') + 1), 'table:number-rows-repeated') ?? 1,
    );
    const cells: CalcCell[] = [];
    for (const cellMatch of (rowMatch[1] ?? '').matchAll(cellPattern)) {
      const tag = cellMatch[1];
      const paragraphs = [...(cellMatch[2] ?? '').matchAll(/<text:p\b[^>]*?(?:\/>|>([\s\S]*?)<\/text:p>)/g)];
      const cell: CalcCell = {
        type: attribute(tag, 'office:value-type') ?? 'empty',
        text: paragraphs.map((p) => paragraphText(p[1] ?? '')).join('\n'),
      };
      const value = attribute(tag, 'office:value');
      if (value !== undefined) cell.value = value;
      const dateValue = attribute(tag, 'office:date-value');
      if (dateValue !== undefined) cell.dateValue = dateValue;
      const formula = attribute(tag, 'table:formula');
      if (formula !== undefined) cell.formula = formula;
      const repeat = Number(attribute(tag, 'table:number-columns-repeated') ?? 1);
      for (let i = 0; i < Math.min(repeat, 1024); i++) cells.push({ ...cell });
    }
    while (cells.length && cells[cells.length - 1].type === 'empty') cells.pop();
    // A trailing block of empty rows (Calc pads the sheet) carries nothing to compare.
    if (cells.length === 0 && repeatRows > 1) continue;
    rows.push(cells);
  }
  while (rows.length && rows[rows.length - 1].length === 0) rows.pop();
  return rows;
}
