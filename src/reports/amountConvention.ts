import Decimal from 'decimal.js';
import { iso4217MinorUnits } from '../shared/iso4217MinorUnits.js';
import { isKnownCurrency } from '../shared/money.js';

/**
 * How a report writes the amount it executed, besides its separators (docs/DESIGN.md, "Amount
 * conventions"). Every choice is explicit: a report read with the wrong one is off by a factor of 100 or
 * of -1, which no check downstream could tell from a real mismatch.
 */
export interface AmountConvention {
  /**
   * `minor`: the amount is a whole number of the currency's minor units (cents; yen have none, dinars
   * have three, per ISO 4217: src/shared/iso4217MinorUnits.ts): `1050` in BRL is 10.50. A row whose
   * currency the runtime does not know, or that has no minor unit, is rejected rather than guessed.
   * @default 'major'
   */
  units?: 'major' | 'minor';
  /**
   * With `units: 'minor'`: the amount has this many implied decimals whatever its currency, instead of the
   * currency's own minor unit. PayPal's Settlement Report writes "100,00 yen and $100.00 USD" both as
   * `10000`: 2 for every currency, yen included.
   * @default undefined (the currency's ISO 4217 minor unit)
   */
  impliedDecimals?: number;
  /**
   * The sign comes from a debit/credit indicator column: the amount is read as unsigned, then made
   * negative when the indicator is one of `negative` and left positive when one of `positive`. Any other
   * indicator rejects the row. E.g. `{ column: 'Transaction Debit or Credit', negative: ['DR'], positive: ['CR'] }`.
   * @default undefined (the amount carries its own sign)
   */
  sign?: { column: string; negative: readonly string[]; positive: readonly string[] };
  /**
   * The amount is in one of two columns, e.g. Adyen's `Gross Debit (GC)` / `Gross Credit (GC)`: exactly
   * one of them holds it (a row with both or neither is rejected); a debit is negative, a credit positive.
   * Replaces `columns.amount`.
   * @default undefined (one amount column)
   */
  debitCredit?: { debit: string; credit: string };
  /**
   * Compare the amount without its sign (Twilio's `price` is what we paid, written negative).
   * @default false
   */
  absolute?: boolean;
}

/** The columns a convention reads besides `columns.amount`, in a fixed order (sign, debit, credit). */
export function conventionColumns(convention: AmountConvention | undefined): string[] {
  if (!convention) return [];
  const columns: string[] = [];
  if (convention.sign) columns.push(convention.sign.column);
  if (convention.debitCredit) columns.push(convention.debitCredit.debit, convention.debitCredit.credit);
  return columns;
}

/** Problems of a convention as configured, worded for the operator (empty when usable). */
export function amountConventionProblems(convention: unknown, where: string): string[] {
  if (convention === undefined) return [];
  if (typeof convention !== 'object' || convention === null) return [`${where} must be an object`];
  const c = convention as Record<string, unknown>;
  const problems: string[] = [];
  if (c.units !== undefined && c.units !== 'major' && c.units !== 'minor') {
    problems.push(`${where}.units must be "major" or "minor", got ${JSON.stringify(c.units)}`);
  }
  if (c.impliedDecimals !== undefined) {
    if (c.units !== 'minor') problems.push(`${where}.impliedDecimals needs units: "minor"`);
    else if (
      !Number.isInteger(c.impliedDecimals) ||
      (c.impliedDecimals as number) < 0 ||
      (c.impliedDecimals as number) > 10
    )
      problems.push(`${where}.impliedDecimals must be a whole number from 0 to 10`);
  }
  if (c.absolute !== undefined && typeof c.absolute !== 'boolean') {
    problems.push(`${where}.absolute must be true or false`);
  }
  if (c.sign !== undefined) {
    const sign = c.sign as Record<string, unknown> | null;
    const list = (value: unknown) =>
      Array.isArray(value) &&
      value.length > 0 &&
      value.every((v) => typeof v === 'string' && v.trim() !== '');
    if (typeof sign !== 'object' || sign === null || typeof sign.column !== 'string' || sign.column === '') {
      problems.push(`${where}.sign.column must be a column name`);
    } else if (!list(sign.negative) || !list(sign.positive)) {
      problems.push(
        `${where}.sign.negative and ${where}.sign.positive must each list at least one indicator`,
      );
    } else if ((sign.negative as string[]).some((v) => (sign.positive as string[]).includes(v))) {
      problems.push(`${where}.sign: an indicator cannot be both negative and positive`);
    }
  }
  if (c.debitCredit !== undefined) {
    const dc = c.debitCredit as Record<string, unknown> | null;
    if (
      typeof dc !== 'object' ||
      dc === null ||
      typeof dc.debit !== 'string' ||
      dc.debit === '' ||
      typeof dc.credit !== 'string' ||
      dc.credit === '' ||
      dc.debit === dc.credit
    ) {
      problems.push(`${where}.debitCredit needs two different column names, debit and credit`);
    }
    if (c.sign !== undefined) problems.push(`${where}: sign and debitCredit cannot both give the sign`);
  }
  return problems;
}

type ConventionResult = { ok: true; value: string } | { ok: false; reason: string };

/**
 * Digits of `currency`'s ISO 4217 minor unit (JPY 0, BRL 2, KWD 3; see iso4217MinorUnits), or undefined
 * when the currency data does not know the code (the same codes the ledger accepts for an intent) or the
 * code has no minor unit (XAU).
 */
export function minorUnitDigits(currency: string): number | undefined {
  if (!isKnownCurrency(currency)) return undefined;
  return iso4217MinorUnits(currency) ?? undefined;
}

/**
 * Applies a convention to an amount already read as an exact decimal string (`"-10.50"`). With `unsigned`
 * the report gives the sign elsewhere (an indicator, the debit column): the text must carry none, and
 * `negate` makes it negative. Then minor units become major ones, then `absolute` drops the sign. Major
 * amounts keep the digits as written; nothing goes through a JS number.
 */
export function applyAmountConvention(
  value: string,
  input: { currency: string | null; convention: AmountConvention; negate?: boolean; unsigned?: boolean },
): ConventionResult {
  let text = value;
  if (input.unsigned) {
    if (text.startsWith('-') || text.startsWith('+')) {
      return {
        ok: false,
        reason: `${JSON.stringify(value)} has a sign, but the report gives the sign elsewhere`,
      };
    }
    if (input.negate) text = `-${text}`;
  }
  if (input.convention.units === 'minor') {
    if (input.currency === null) return { ok: false, reason: 'an amount in minor units needs a currency' };
    const digits = input.convention.impliedDecimals ?? minorUnitDigits(input.currency);
    if (digits === undefined) {
      return {
        ok: false,
        reason: `the minor unit of ${JSON.stringify(input.currency)} is not known, so ${JSON.stringify(value)} cannot be read in minor units`,
      };
    }
    const minor = new Decimal(text);
    if (!minor.isInteger()) {
      return { ok: false, reason: `${JSON.stringify(value)} is not a whole number of minor units` };
    }
    // Minor units are written without a decimal separator: "25.00" was written in another unit (a
    // spreadsheet's number format, a partner that moved to major units) and is not 25 minor units.
    if (text.includes('.')) {
      return {
        ok: false,
        reason: `${JSON.stringify(value)} has a decimal separator, but the report writes amounts in whole minor units`,
      };
    }
    text = minor.div(new Decimal(10).pow(digits)).toFixed(digits);
  }
  if (input.convention.absolute && text.startsWith('-')) text = text.slice(1);
  // Zero has no sign: "-0.00" would read as a negative amount in messages.
  if (text.startsWith('-') && /^-0(\.0*)?$/.test(text)) text = text.slice(1);
  return { ok: true, value: text };
}
