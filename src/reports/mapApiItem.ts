import { identifierText, mangledIdentifier } from '../shared/identifierText.js';
import { type AmountConvention, applyAmountConvention } from './amountConvention.js';
import type { ApiSourceConfig } from './apiSourceConfig.js';
import { parseDecimal } from './parseDecimal.js';
import { parseExecutedAt } from './parseExecutedAt.js';
import {
  describe,
  getPath,
  isJsonObject,
  JsonNumber,
  type JsonValue,
  pathBlocked,
} from './parseJsonKeepingNumbers.js';
import { ignoredRow, type PartnerRow, type RejectedRow, type RowItem } from './partnerRow.js';
import { classifyRow, kindColumns, type RowKind, type RowKindRule } from './rowKind.js';

// One item -> one row or one rejection

/**
 * More significant digits than this and a partner's encoder that went through a binary double may have
 * rounded the amount before writing it (a double keeps 15 decimal digits exactly, DBL_DIG); exponent
 * notation means the same kind of encoder. We cannot tell, so such amounts are rejected for a human to
 * see rather than guessed. Amounts sent as JSON strings are never affected.
 */
const MAX_EXACT_DIGITS = 15;

function numberIsExact(source: string): boolean {
  if (/[eE]/.test(source)) return false;
  const digits = source.replace(/[-.]/g, '').replace(/^0+/, '').replace(/0+$/, '');
  return digits.length <= MAX_EXACT_DIGITS;
}

type FieldResult<T> = { ok: true; value: T } | { ok: false; reason: string };

function readIdentifier(value: JsonValue | undefined, identifier = true): FieldResult<string | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  // Trimmed, as on every other path (identifierText): a padded copy of our reference would match nothing and
  // let absence look proven. An intent whose own reference has edge whitespace is never proven absent
  // (collectCandidates), so trimming cannot make one look absent either.
  const text =
    typeof value === 'string'
      ? identifierText(value)
      : // The exact digits the partner sent, even beyond 2^53 where a double would have changed them.
        value instanceof JsonNumber
        ? value.source
        : undefined;
  if (text === undefined) return { ok: false, reason: `expected text or a number, found ${describe(value)}` };
  const mangled = text === null || !identifier ? undefined : mangledIdentifier(text);
  if (mangled !== undefined) return { ok: false, reason: mangled };
  return { ok: true, value: text };
}

function readAmount(value: JsonValue | undefined): FieldResult<string> {
  if (value === undefined || value === null) return { ok: false, reason: 'amount is missing' };
  if (value instanceof JsonNumber) {
    if (!numberIsExact(value.source)) {
      return {
        ok: false,
        reason: 'amount is a JSON number that cannot be represented exactly; send it as a string',
      };
    }
    return parseDecimal(value.source, { decimalSeparator: '.', thousandsSeparator: undefined });
  }
  if (typeof value === 'string') {
    // Same as CSV cells: surrounding blanks are the partner's formatting, not part of the amount.
    return parseDecimal(value.trim(), { decimalSeparator: '.', thousandsSeparator: undefined });
  }
  return { ok: false, reason: `expected a decimal amount such as "12.50", found ${describe(value)}` };
}

export const CURRENCY = /^[A-Za-z]{3}$/;

function readCurrency(value: JsonValue | undefined): FieldResult<string> {
  if (value === undefined || value === null) return { ok: false, reason: 'currency is missing' };
  if (typeof value !== 'string') {
    return { ok: false, reason: `expected a 3-letter ISO 4217 code such as "BRL", found ${describe(value)}` };
  }
  const code = value.trim();
  if (!CURRENCY.test(code)) return { ok: false, reason: `"${code}" is not a 3-letter ISO 4217 code` };
  return { ok: true, value: code.toUpperCase() };
}

function readExecutedAt(
  value: JsonValue | undefined,
  timezone: string,
  dateFormat: string | undefined,
): FieldResult<Date> {
  if (value === undefined || value === null) return { ok: false, reason: 'execution time is missing' };
  if (typeof value !== 'string') {
    return { ok: false, reason: `expected an ISO 8601 date-time string, found ${describe(value)}` };
  }
  return parseExecutedAt(value, { timezone, dateFormat });
}

/**
 * Turns one listed item into a row, or into a rejection naming the configured field path that was wrong
 * (`*` when the item is not an object). The first problem found is reported, in field order.
 */
export function mapApiItem(
  item: JsonValue,
  line: number,
  fields: ApiSourceConfig['fields'],
  timezone: string,
  reading: {
    kind?: RowKindRule;
    amount?: AmountConvention;
    dateFormat?: string;
    amountMayBeMissing?: boolean;
  } = {},
): RowItem {
  const { kind: kindRule, amount: convention } = reading;
  // Once both identifiers are read, a rejection carries them (see RejectedRow.identifiers).
  let identifiers: RejectedRow['identifiers'];
  const reject = (field: string, reason: string): RowItem => ({
    kind: 'rejected',
    rejected: identifiers ? { line, field, reason, identifiers } : { line, field, reason },
  });
  if (!isJsonObject(item)) return reject('*', `the item is ${describe(item)}, not an object`);

  // An identifier the item holds in a shape the path cannot follow is unreadable, not absent: taken as
  // "no reference", the row would match nothing and its intent's absence would look proven.
  for (const path of [fields.reference, fields.partnerReference]) {
    const blocked = path === undefined ? undefined : pathBlocked(item, path);
    if (path !== undefined && blocked) {
      return reject(
        path,
        `expected an object at ${JSON.stringify(blocked.at)}, found ${describe(blocked.found)}`,
      );
    }
  }
  let reference: string | null = null;
  if (fields.reference !== undefined) {
    const read = readIdentifier(getPath(item, fields.reference));
    if (!read.ok) return reject(fields.reference, read.reason);
    reference = read.value;
  }
  let partnerReference: string | null = null;
  if (fields.partnerReference !== undefined) {
    const read = readIdentifier(getPath(item, fields.partnerReference));
    if (!read.ok) return reject(fields.partnerReference, read.reason);
    partnerReference = read.value;
  }
  identifiers = { reference, partnerReference };
  let kind: RowKind = 'execution';
  if (kindRule) {
    const texts: string[] = [];
    for (const path of kindColumns(kindRule)) {
      const read = readIdentifier(getPath(item, path), false);
      if (!read.ok) return reject(path, read.reason);
      texts.push((read.value ?? '').trim());
    }
    const classified = classifyRow(kindRule, texts);
    if (!classified.ok) return reject(classified.field, classified.reason);
    kind = classified.kind;
    // An inbound message, a fee or a payout says nothing about an intent: nothing else in it is checked.
    if (kind === 'ignored') return ignoredRow(line, reference, partnerReference);
  }
  if (reference === null && partnerReference === null) {
    return reject(
      fields.reference ?? fields.partnerReference ?? '*',
      'has neither a reference nor a partner reference, so it cannot be matched to anything',
    );
  }

  let amount: string | null = null;
  const rawAmount = fields.amount === undefined ? undefined : getPath(item, fields.amount);
  // Only where the partner documents it (Twilio prices a message after sending it): an unknown amount.
  const amountUnknown =
    reading.amountMayBeMissing === true && (rawAmount === undefined || rawAmount === null);
  if (fields.amount !== undefined && !amountUnknown) {
    const read = readAmount(rawAmount);
    if (!read.ok) return reject(fields.amount, read.reason);
    amount = read.value;
  }
  let currency: string | null = null;
  if (typeof fields.currency === 'object') {
    currency = fields.currency.value.trim().toUpperCase();
  } else if (fields.currency !== undefined) {
    const read = readCurrency(getPath(item, fields.currency));
    if (!read.ok) return reject(fields.currency, read.reason);
    currency = read.value;
  }
  if (convention && amount !== null) {
    const converted = applyAmountConvention(amount, { currency, convention });
    if (!converted.ok) return reject(fields.amount!, converted.reason);
    amount = converted.value;
  }
  let executedAt: Date | null = null;
  const rawTime = fields.executedAt === undefined ? undefined : getPath(item, fields.executedAt);
  // A try that did not execute has no execution time (Twilio's date_sent of a failed message is null);
  // it is only ever used by its identifiers (see separateRowKinds).
  const noTime = kind === 'failed' && (rawTime === undefined || rawTime === null);
  if (fields.executedAt !== undefined && !noTime) {
    const read = readExecutedAt(rawTime, timezone, reading.dateFormat);
    if (!read.ok) return reject(fields.executedAt, read.reason);
    executedAt = read.value;
  }
  const row: PartnerRow = { line, reference, partnerReference, amount, currency, executedAt };
  if (kind !== 'execution') row.kind = kind;
  return { kind: 'row', row };
}
