/** How a report writes its amounts. */
export interface DecimalFormat {
  /**
   * One character between the integer and the fraction digits.
   * @default '.'
   */
  decimalSeparator?: string;
  /**
   * One character grouping integer digits by three; when absent, any grouping is an error.
   * @default undefined (none)
   */
  thousandsSeparator?: string;
}

export type DecimalParseResult = { ok: true; value: string } | { ok: false; reason: string };

/** Matches NUMERIC(30, 10): the widest amount the ledger stores without rounding. */
export const MAX_INTEGER_DIGITS = 20;
export const MAX_FRACTION_DIGITS = 10;

/**
 * Reads an amount as an exact decimal string (`"-1234.50"`): `.` as separator, no grouping, no
 * leading zeros except a single `0`, fraction digits kept exactly as written. It works on the text
 * alone and never goes through a JS number, so `0.1` stays `0.1` and 20-digit amounts stay exact.
 * Anything doubtful is refused with a reason rather than guessed, since a wrong amount is worse than
 * a rejected row. Surrounding whitespace is not accepted; callers trim.
 */
export function parseDecimal(text: string, format: DecimalFormat = {}): DecimalParseResult {
  const decimalSeparator = format.decimalSeparator ?? '.';
  const thousandsSeparator = format.thousandsSeparator || undefined;
  if (decimalSeparator.length !== 1 || decimalSeparator === thousandsSeparator) {
    // A programming error, not bad data: the config resolver already refuses such formats.
    throw new RangeError(
      `invalid decimal format: decimal ${JSON.stringify(decimalSeparator)}, thousands ${JSON.stringify(thousandsSeparator)}`,
    );
  }

  if (text === '') return fail('empty');
  let unsigned = text;
  let negative = false;
  if (unsigned[0] === '-' || unsigned[0] === '+') {
    negative = unsigned[0] === '-';
    unsigned = unsigned.slice(1);
  }
  if (unsigned === '') return fail('a sign without digits');
  if (unsigned[0] === '-' || unsigned[0] === '+') return fail('more than one sign');
  // Name the non-numbers JavaScript would happily produce, so the reason says what went wrong.
  if (/^(nan|inf|infinity)$/i.test(unsigned)) return fail(`${unsigned} is not a number`);
  if (/^[0-9]*(?:\D[0-9]+)?[eE][+-]?[0-9]+$/.test(unsigned)) {
    return fail('exponent notation (like 1e5) is not accepted');
  }

  const parts = unsigned.split(decimalSeparator);
  if (parts.length > 2) return fail('more than one decimal separator');
  const integerPart = parts[0]!;
  const fractionPart = parts[1];

  for (const char of integerPart) {
    if (isDigit(char) || char === thousandsSeparator) continue;
    return fail(unexpected(char));
  }
  if (fractionPart !== undefined) {
    if (fractionPart === '') return fail('no digits after the decimal separator');
    for (const char of fractionPart) {
      if (isDigit(char)) continue;
      if (char === thousandsSeparator) return fail('thousands separator after the decimal separator');
      return fail(unexpected(char));
    }
  }

  let integerDigits = integerPart;
  if (thousandsSeparator !== undefined && integerPart.includes(thousandsSeparator)) {
    const groups = integerPart.split(thousandsSeparator);
    const first = groups[0]!;
    const wellGrouped =
      first.length >= 1 && first.length <= 3 && groups.slice(1).every((group) => group.length === 3);
    if (!wellGrouped) return fail('misplaced thousands separator (digits must be grouped by three)');
    integerDigits = groups.join('');
  }
  if (integerDigits === '') {
    // ",5" is unambiguous, "" and "-" were refused above, so only a leading fraction gets here.
    integerDigits = '0';
  }
  integerDigits = integerDigits.replace(/^0+(?=[0-9])/, '');

  if (integerDigits.length > MAX_INTEGER_DIGITS) {
    return fail(
      `too many digits: ${integerDigits.length} before the decimal separator (at most ${MAX_INTEGER_DIGITS})`,
    );
  }
  if (fractionPart !== undefined && fractionPart.length > MAX_FRACTION_DIGITS) {
    return fail(
      `too many digits: ${fractionPart.length} after the decimal separator (at most ${MAX_FRACTION_DIGITS})`,
    );
  }

  const unsignedValue = fractionPart === undefined ? integerDigits : `${integerDigits}.${fractionPart}`;
  // Zero has one canonical form: "-0,00" is the same amount as "0,00".
  const isZero = /^[0.]+$/.test(unsignedValue);
  return { ok: true, value: negative && !isZero ? `-${unsignedValue}` : unsignedValue };
}

function isDigit(char: string): boolean {
  return char >= '0' && char <= '9';
}

function unexpected(char: string): string {
  if (char === '-' || char === '+') return 'a sign is only allowed before the first digit';
  return `unexpected character ${JSON.stringify(char)}`;
}

function fail(reason: string): DecimalParseResult {
  return { ok: false, reason };
}
