import { identifierText, mangledIdentifier } from '../shared/identifierText.js';
import { applyAmountConvention } from './amountConvention.js';
import type { ResolvedCsvSourceConfig } from './csvSourceConfig.js';
import { parseDecimal } from './parseDecimal.js';
import { parseExecutedAt } from './parseExecutedAt.js';
import { ignoredRow, type PartnerRow, type RejectedRow, type ReportItem } from './partnerRow.js';
import type { HeaderLayout } from './readHeader.js';
import { classifyRow, type RowKind } from './rowKind.js';
import { rowTimeZone } from './rowTimeZone.js';

/** A mapped cell longer than this is refused: no reference, amount or date is anywhere near it. */
export const MAX_FIELD_CHARS = 1024 * 1024;
/** Values quoted in a rejection reason are cut here, so one huge cell cannot flood logs and reviews. */
const REASON_VALUE_CHARS = 40;

export interface RowContext {
  layout: HeaderLayout;
  settings: ResolvedCsvSourceConfig;
  timezone: string;
}

export function toItem(cells: string[], line: number, context: RowContext): ReportItem {
  const { layout, settings } = context;
  if (cells.length !== layout.width) {
    // Cells would be shifted; reading them by position would put values under the wrong column.
    return reject(line, '*', `expected ${layout.width} fields as in the header, found ${cells.length}`);
  }
  const {
    reference: referenceColumn,
    partnerReference: partnerColumn,
    amount,
    currency,
    executedAt,
  } = layout.byField;
  // Trimmed whether the cell was quoted or not, on every path (see identifierText).
  const reference = referenceColumn ? identifierText(cells[referenceColumn.index]!) : null;
  const partnerReference = partnerColumn ? identifierText(cells[partnerColumn.index]!) : null;
  for (const column of layout.columns) {
    const problem = cellProblem(cells[column.index]!, settings.encoding);
    if (problem === undefined) continue;
    // A garbled identifier could be anyone's; with readable ones the rejection still names its intent.
    const readable = !identifierProblem(cells, layout, settings.encoding);
    return reject(line, column.name, problem, readable ? { reference, partnerReference } : undefined);
  }
  for (const [column, value] of [
    [referenceColumn, reference],
    [partnerColumn, partnerReference],
  ] as const) {
    const mangled = value === null ? undefined : mangledIdentifier(value);
    // It may be anybody's: without identifiers the run proves nothing absent (RejectedRow.identifiers).
    if (mangled !== undefined) return reject(line, column!.name, mangled);
  }
  const identifiers = { reference, partnerReference };
  let kind: RowKind = 'execution';
  if (settings.kind) {
    const classified = classifyRow(
      settings.kind,
      layout.kindIndexes.map((index) => cells[index]!.trim()),
    );
    if (!classified.ok) return reject(line, classified.field, classified.reason, identifiers);
    kind = classified.kind;
    // A fee, a payout or a batch total says nothing about an intent: nothing else in it is checked.
    if (kind === 'ignored') return ignoredRow(line, reference, partnerReference);
  }
  if (reference === null && partnerReference === null) {
    // Like an accepted row without identifiers, it can match no intent, so it says nothing about one.
    return reject(
      line,
      (referenceColumn ?? partnerColumn)!.name,
      'no reference and no partner reference',
      identifiers,
    );
  }

  // Typed values are trimmed even when quoted: whitespace is never part of an amount, code or time.
  const convention = settings.amount;
  let amountText: string | undefined;
  let amountField: string | undefined;
  let negate = false;
  if (convention?.debitCredit) {
    // Exactly one of the two columns holds the amount; which one gives its sign.
    const debit = cells[layout.amountIndexes[0]!]!.trim();
    const credit = cells[layout.amountIndexes[1]!]!.trim();
    const { debit: debitName, credit: creditName } = convention.debitCredit;
    if ((debit === '') === (credit === '')) {
      const how = debit === '' ? 'neither' : 'both';
      return reject(line, debitName, `${how} ${debitName} and ${creditName} hold an amount`, identifiers);
    }
    amountText = debit === '' ? credit : debit;
    amountField = debit === '' ? creditName : debitName;
    negate = debit !== '';
  } else if (amount !== undefined) {
    amountText = cells[amount.index]!.trim();
    amountField = amount.name;
  }
  if (convention?.sign) {
    const indicator = cells[layout.amountIndexes[0]!]!.trim();
    if (convention.sign.negative.includes(indicator)) negate = true;
    else if (!convention.sign.positive.includes(indicator)) {
      return reject(
        line,
        convention.sign.column,
        `${show(indicator)} is not a known debit/credit indicator (known: ${[...convention.sign.negative, ...convention.sign.positive].join(', ')})`,
        identifiers,
      );
    }
  }
  let amountValue: string | null = null;
  if (amountText !== undefined) {
    const parsed = parseDecimal(amountText, settings);
    if (!parsed.ok)
      return reject(
        line,
        amountField!,
        `${show(amountText)} is not a valid amount: ${parsed.reason}`,
        identifiers,
      );
    amountValue = parsed.value;
  }

  let currencyValue: string | null = settings.currencyConstant ?? null;
  if (currency !== undefined) {
    const text = cells[currency.index]!.trim();
    currencyValue = isCurrencyCode(text) ? text : text.toUpperCase();
    if (!isCurrencyCode(currencyValue)) {
      return reject(
        line,
        currency.name,
        `${show(text)} is not a 3-letter ISO 4217 currency code`,
        identifiers,
      );
    }
  }

  if (convention && amountValue !== null) {
    const converted = applyAmountConvention(amountValue, {
      currency: currencyValue,
      convention,
      negate,
      unsigned: convention.sign !== undefined || convention.debitCredit !== undefined,
    });
    if (!converted.ok) return reject(line, amountField!, converted.reason, identifiers);
    amountValue = converted.value;
  }

  let executedAtValue: Date | null = null;
  if (executedAt !== undefined) {
    let timezone = context.timezone;
    const zoneColumn = layout.byField.timeZone;
    if (zoneColumn !== undefined) {
      const zone = rowTimeZone(cells[zoneColumn.index]!.trim(), settings.timeZoneAbbreviations);
      if (!zone.ok) return reject(line, zoneColumn.name, zone.reason, identifiers);
      timezone = zone.zone;
    }
    const text = cells[executedAt.index]!.trim();
    const parsed = parseExecutedAt(text, { dateFormat: settings.dateFormat, timezone });
    if (!parsed.ok) {
      return reject(
        line,
        executedAt.name,
        `${show(text)} is not a valid date-time: ${parsed.reason}`,
        identifiers,
      );
    }
    executedAtValue = parsed.value;
  }

  const row: PartnerRow = {
    line,
    reference,
    partnerReference,
    amount: amountValue,
    currency: currencyValue,
    executedAt: executedAtValue,
  };
  if (kind !== 'execution') row.kind = kind;
  const { settlementAmount, settlementCurrency, rowId } = layout.byField;
  if (rowId !== undefined) row.rowId = identifierText(cells[rowId.index]!);
  if (settlementAmount !== undefined) {
    const text = cells[settlementAmount.index]!.trim();
    if (text !== '') {
      const parsed = parseDecimal(text, settings);
      if (!parsed.ok) {
        return reject(
          line,
          settlementAmount.name,
          `${show(text)} is not a valid amount: ${parsed.reason}`,
          identifiers,
        );
      }
      row.settlementAmount = parsed.value;
    }
  }
  if (settlementCurrency !== undefined) {
    const text = cells[settlementCurrency.index]!.trim();
    if (text !== '') {
      const code = text.toUpperCase();
      if (!isCurrencyCode(code)) {
        return reject(
          line,
          settlementCurrency.name,
          `${show(text)} is not a 3-letter ISO 4217 currency code`,
          identifiers,
        );
      }
      row.settlementCurrency = code;
    }
  }
  return { kind: 'row', row };
}

function reject(
  line: number,
  field: string,
  reason: string,
  identifiers?: RejectedRow['identifiers'],
): ReportItem {
  return {
    kind: 'rejected',
    rejected: identifiers ? { line, field, reason, identifiers } : { line, field, reason },
  };
}

/** Whether one of the row's identifier cells is itself unreadable (see {@link cellProblem}). */
function identifierProblem(
  cells: string[],
  layout: HeaderLayout,
  encoding: ResolvedCsvSourceConfig['encoding'],
): boolean {
  const { reference, partnerReference } = layout.byField;
  return [reference, partnerReference].some(
    (column) => column !== undefined && cellProblem(cells[column.index]!, encoding) !== undefined,
  );
}

/** Three ASCII capital letters (what `/^[A-Z]{3}$/` accepts), without a regex per row. */
function isCurrencyCode(text: string): boolean {
  if (text.length !== 3) return false;
  for (let i = 0; i < 3; i++) {
    const code = text.charCodeAt(i);
    if (code < 65 || code > 90) return false;
  }
  return true;
}

/** Problems that make a cell untrustworthy whatever it is supposed to hold. */
function cellProblem(value: string, encoding: ResolvedCsvSourceConfig['encoding']): string | undefined {
  if (value.length > MAX_FIELD_CHARS) {
    return `value of ${value.length} characters is larger than 1 MB: ${show(value)}`;
  }
  if (value.includes('\u0000')) return `${show(value)} contains a NUL byte`;
  // The decoder turns bytes that are invalid in the declared encoding into U+FFFD. Accepting them
  // would store a reference that matches nothing (and usually means the encoding is configured wrong).
  if (value.includes('\uFFFD')) {
    const name = encoding === 'utf8' ? 'UTF-8' : encoding;
    return `${show(value)} contains invalid ${name} bytes`;
  }
  return undefined;
}

/** The value as it should appear in a reason: quoted, escaped, and cut to a readable length. */
function show(value: string): string {
  if (value.length <= REASON_VALUE_CHARS) return JSON.stringify(value);
  // Cut by code points so a character outside the BMP is not split into half a surrogate pair.
  const head = Array.from(value.slice(0, REASON_VALUE_CHARS + 1))
    .slice(0, REASON_VALUE_CHARS)
    .join('');
  return JSON.stringify(`${head}…`);
}
