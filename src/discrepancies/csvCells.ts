/** Characters a spreadsheet may read as the start of a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** An amount as PostgreSQL `numeric` prints it: a plain decimal, nothing a spreadsheet can evaluate. */
const PLAIN_DECIMAL = /^-?\d+(\.\d+)?$/;

/**
 * Neutralises a free-text cell against formula injection: a value starting with `=`, `+`, `-`, `@`, tab or
 * carriage return gets a single quote in front, so Excel / LibreOffice / Sheets show it as text instead of
 * evaluating it (`=HYPERLINK(...)` stays visible as `'=HYPERLINK(...)`). Everything else is unchanged.
 */
export function neutraliseCell(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value;
}

/**
 * An amount cell: written as the exact decimal PostgreSQL stored (`-5.00`, `12345678901234567.89`), NOT
 * neutralised, because a plain decimal, even negative, is a number to a spreadsheet, never a formula, and
 * finance must be able to sum the column. Anything that is not a plain decimal (cannot come from a
 * `numeric` column, but an export must not trust that) is treated as free text and neutralised.
 */
export function amountCell(value: string | null): string {
  if (value === null) return '';
  return PLAIN_DECIMAL.test(value) ? value : neutraliseCell(value);
}
