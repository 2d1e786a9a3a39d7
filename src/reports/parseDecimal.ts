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
const MAX_INTEGER_DIGITS = 20;
const MAX_FRACTION_DIGITS = 10;

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
  // Nearly every amount of a report is well formed: one pass over its characters settles it. Anything
  // the pass is not sure about goes through the checks below, which also give the reason.
  const decimalCode = decimalSeparator.charCodeAt(0);
  const thousandsCode =
    thousandsSeparator === undefined
      ? NO_SEPARATOR
      : thousandsSeparator.length === 1
        ? thousandsSeparator.charCodeAt(0)
        : UNUSUAL;
  if (isPlainSeparator(decimalCode) && thousandsCode !== UNUSUAL && isPlainSeparator(thousandsCode)) {
    const value = wellFormedDecimal(text, decimalCode, thousandsCode);
    if (value !== undefined) return { ok: true, value };
  }
  return checkedDecimal(text, decimalSeparator, thousandsSeparator);
}

/** `thousandsCode` when amounts must not be grouped. */
const NO_SEPARATOR = -2;
/**
 * A separator the fast path does not handle: outside the BMP, a digit, a sign or an ASCII letter (with
 * `e` as a separator, `1e5` would be an amount to the fast path and exponent notation to the checks).
 */
const UNUSUAL = -1;
const ZERO = 48;
const NINE = 57;
const MINUS = 45;
const PLUS = 43;
const DOT = 46;

function isPlainSeparator(code: number): boolean {
  const letter = (code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a;
  return !(code >= ZERO && code <= NINE) && code !== MINUS && code !== PLUS && !letter;
}

/**
 * The fast path of {@link parseDecimal}: the canonical value of `text` when it is a plain amount (an
 * optional sign, at least one integer digit, grouping by three if any, an optional fraction of 1 to
 * {@link MAX_FRACTION_DIGITS} digits, at most {@link MAX_INTEGER_DIGITS} integer digits once leading zeros
 * are dropped), else `undefined`. It accepts a subset of what the checked path accepts and gives the
 * same value for it; the tests compare both on random text.
 */
function wellFormedDecimal(text: string, decimalCode: number, thousandsCode: number): string | undefined {
  const length = text.length;
  let i = 0;
  let negative = false;
  const first = text.charCodeAt(0);
  if (first === MINUS || first === PLUS) {
    negative = first === MINUS;
    i = 1;
  }
  const integerStart = i;
  // Digits since the last thousands separator (or since the start, before the first one).
  let groupDigits = 0;
  let grouped = false;
  for (; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code >= ZERO && code <= NINE) {
      groupDigits++;
    } else if (code === thousandsCode) {
      // First group 1 to 3 digits, every later one exactly 3.
      if (grouped ? groupDigits !== 3 : groupDigits === 0 || groupDigits > 3) return undefined;
      grouped = true;
      groupDigits = 0;
    } else {
      break;
    }
  }
  const integerEnd = i;
  if (integerEnd === integerStart || (grouped && groupDigits !== 3)) return undefined;
  let fraction = '';
  if (i < length) {
    if (text.charCodeAt(i) !== decimalCode) return undefined;
    const fractionStart = ++i;
    for (; i < length; i++) {
      const code = text.charCodeAt(i);
      if (code < ZERO || code > NINE) return undefined;
    }
    const digits = i - fractionStart;
    if (digits === 0 || digits > MAX_FRACTION_DIGITS) return undefined;
    fraction = text.slice(fractionStart);
  }
  let integer = '';
  if (grouped) {
    // The groups between separators, concatenated.
    let from = integerStart;
    for (let at = integerStart; at < integerEnd; at++) {
      if (text.charCodeAt(at) === thousandsCode) {
        integer += text.slice(from, at);
        from = at + 1;
      }
    }
    integer += text.slice(from, integerEnd);
  } else {
    integer = text.slice(integerStart, integerEnd);
  }
  let zeros = 0;
  while (zeros < integer.length - 1 && integer.charCodeAt(zeros) === ZERO) zeros++;
  if (zeros > 0) integer = integer.slice(zeros);
  if (integer.length > MAX_INTEGER_DIGITS) return undefined;
  const unsigned = fraction === '' ? integer : `${integer}.${fraction}`;
  // Zero has one canonical form: "-0,00" is the same amount as "0,00".
  return negative && !isAllZeros(unsigned) ? `-${unsigned}` : unsigned;
}

function isAllZeros(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code !== ZERO && code !== DOT) return false;
  }
  return true;
}

/**
 * The checked path of {@link parseDecimal}: every rule in turn, so a refusal says which one. It alone
 * decides every input; the fast path only answers early for some. Exported for the tests that compare them.
 */
export function checkedDecimal(
  text: string,
  decimalSeparator: string,
  thousandsSeparator: string | undefined,
): DecimalParseResult {
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
