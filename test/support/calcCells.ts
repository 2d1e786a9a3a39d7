import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

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
    await execFileAsync(
      SOFFICE,
      [
        // A profile of its own: a user's or another test's running soffice would otherwise take the job.
        `-env:UserInstallation=file://${join(dir, 'profile')}`,
        '--headless',
        `--infilter=CSV:${separator.charCodeAt(0)},34,76,1${options.language ? `,,${options.language}` : ''}`,
        '--convert-to',
        'fods',
        '--outdir',
        dir,
        input,
      ],
      { timeout: 120_000 },
    );
    const xml = readFileSync(join(dir, 'export.fods'), 'utf8');
    return { rows: parseFods(xml), xml };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
