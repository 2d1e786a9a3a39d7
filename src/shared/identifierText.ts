/**
 * How a report's identifiers (our reference, the partner's reference) are read, the same way on every path:
 * CSV cells (the fast splitter and csv-parse alike, quoted or not), fixed-width fields and API items.
 *
 * Surrounding whitespace is never part of an identifier. PayPal quotes every text field and allows blanks
 * in them; csv-parse keeps a quoted value exactly, the fast path trimmed it: `"order-2001 "` matched no
 * intent, was an orphan, and the intent whose payment it was could be proven not executed (a second charge).
 * Trimmed here with `String.prototype.trim`, whose characters {@link TRIM_CHARACTERS} lists for SQL. What is
 * blank after trimming is "no reference", exactly like an empty cell.
 */
export function identifierText(text: string): string | null {
  const trimmed = text.trim();
  return trimmed === '' ? null : trimmed;
}

/**
 * Why an identifier cannot be trusted to name anybody, or undefined. A spreadsheet that opened the file and
 * saved it again writes a long numeric id in scientific notation (`1.23457E+19`, `8,81500E+15` in a
 * comma-decimal locale): the digits are gone, so it names no record we can find, yet it may be one of ours.
 * The sign of the exponent is required: spreadsheets always write it, and an id such as `2E10` may be real.
 */
export function mangledIdentifier(value: string): string | undefined {
  if (!SCIENTIFIC.test(value)) return undefined;
  return `${JSON.stringify(value)} is a number in scientific notation (a spreadsheet rewrote the id and lost its digits): it names nobody we can find`;
}

const SCIENTIFIC = /^[+-]?\d+(?:[.,]\d+)?E[+-]\d{1,3}$/i;

/**
 * Every character `String.prototype.trim` removes (ECMAScript WhiteSpace and LineTerminator), for SQL's
 * `btrim(text, characters)`: test/shared/identifierText.test.ts checks the two agree on every code unit.
 */
export const TRIM_CHARACTERS =
  '\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff';
