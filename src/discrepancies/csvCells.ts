/**
 * Characters a spreadsheet may read as the start of a formula (OWASP "CSV injection"): `=`, `+`, `-`, `@`,
 * tab, carriage return, and their full-width forms `＝ ＋ － ＠` (U+FF1D, U+FF0B, U+FF0D, U+FF20), which
 * spreadsheets with East Asian input normalise to the ASCII ones.
 */
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;

/**
 * Where a spreadsheet may start a new cell inside this one: a line break (CR LF, a bare LF or a bare CR;
 * CR LF counted once), or either separator, `,` or `;`, for a file opened with the separator it was not
 * written with (a pt-BR Calc or Excel opens every CSV with `;`, and splits a quoted comma file there).
 */
const CELL_BREAK = /(\r\n|\r|\n|,|;)/;

/** An amount as PostgreSQL `numeric` prints it: a plain decimal, nothing a spreadsheet can evaluate. */
const PLAIN_DECIMAL = /^-?\d+(\.\d+)?$/;

/**
 * Neutralises a free-text cell against formula injection: the cell's start, and every place after a line
 * break, `,` or `;` inside it ({@link CELL_BREAK}), get a single quote in front when they begin with a
 * formula character ({@link FORMULA_START}), so Excel / LibreOffice / Sheets show it as text instead of
 * evaluating it (`=HYPERLINK(...)` stays visible as `'=HYPERLINK(...)`, `a;=3+3` becomes `a;'=3+3`). The
 * places after a break matter because a reader that splits records on a bare CR or LF, or a file opened
 * with the other separator, starts a new row or cell there whatever the quoting. Everything else is
 * unchanged.
 */
export function neutraliseCell(value: string): string {
  const parts = value.split(CELL_BREAK);
  // split() with a capturing group alternates text and breaks: even indexes are the pieces after the first.
  for (let i = 2; i < parts.length; i += 2) {
    if (FORMULA_START.test(parts[i])) parts[i] = `'${parts[i]}`;
  }
  const rest = parts.join('');
  // The cell's own start is tested on the whole value: a leading CR is itself a formula start.
  return FORMULA_START.test(value) ? `'${rest}` : rest;
}

/**
 * An amount cell: written as the exact decimal PostgreSQL stored (`-5.00`, `12345678901234567.89`), NOT
 * neutralised, because a plain decimal, even negative, is a number to a spreadsheet, never a formula, and
 * finance must be able to sum the column. `decimalMark` is the character between the whole part and the
 * fraction: `.` as stored, or `,` for the `;` export, which a comma-decimal spreadsheet (pt-BR, de-DE)
 * opens and reads `-12,50` as a number (it reads `-12.50` as text and `12.345` KWD as twelve thousand).
 * Anything that is not a plain decimal (cannot come from a `numeric` column, but an export must not trust
 * that) is treated as free text and neutralised.
 */
export function amountCell(value: string | null, decimalMark: '.' | ',' = '.'): string {
  if (value === null) return '';
  if (!PLAIN_DECIMAL.test(value)) return neutraliseCell(value);
  return decimalMark === '.' ? value : value.replace('.', decimalMark);
}

/**
 * Cells that must be quoted whatever the separator: any line break (a bare LF or CR included; csv-stringify
 * quotes only cells holding its own record delimiter, CR LF), a double quote, and BOTH separators, so a
 * comma file opened with `;` (the pt-BR default) or a `;` file opened with `,` still keeps each cell whole.
 */
export const MUST_QUOTE = /[\r\n",;]/;
