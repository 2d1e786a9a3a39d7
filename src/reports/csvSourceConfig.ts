import { type AmountConvention, amountConventionProblems } from './amountConvention.js';
import { type RecordLayout, recordLayoutProblems } from './recordLayout.js';
import { type ReportAccount, reportAccountProblems } from './reportAccount.js';
import { type RowKindRule, rowKindRuleProblems } from './rowKind.js';
import { timeZoneAbbreviationProblems } from './rowTimeZone.js';

/**
 * How to read one partner's CSV settlement report. Partners export whatever their back office
 * produces (semicolons, Latin-1, decimal commas, local times), so every dialect choice is explicit
 * here instead of guessed from the file.
 */
export interface CsvSourceConfig {
  type: 'csv';
  /** The report file, or a glob matching several files; expanding the glob is the caller's job. */
  path: string;
  /**
   * Field separator.
   * @default ','
   */
  delimiter?: string;
  /**
   * Character that quotes a field; inside a quoted field it is escaped by doubling it (RFC 4180).
   * @default '"'
   */
  quote?: string;
  /**
   * Character encoding of the file's bytes. A UTF-8 byte order mark is skipped.
   * @default 'utf8'
   */
  encoding?: 'utf8' | 'latin1' | 'windows-1252';
  /**
   * Number of physical lines before the header (titles, report period, blank lines), skipped unread.
   * @default 0
   */
  skipLines?: number;
  /**
   * Decimal separator of amounts, one character.
   * @default '.'
   */
  decimalSeparator?: string;
  /**
   * Thousands separator of amounts, one character; when absent, amounts must not group digits.
   * @default undefined (none)
   */
  thousandsSeparator?: string;
  /**
   * Luxon format of the execution time, e.g. `'dd/MM/yyyy HH:mm:ss'`. Times without an offset are
   * read in the reconciler's time zone; a format with an offset or zone token uses the file's own.
   * @default undefined (ISO 8601)
   */
  dateFormat?: string;
  /**
   * Maps our fields to the header names used in the file. A field left out is `null` in every row.
   * At least one of `reference` and `partnerReference` is required to identify rows.
   */
  columns: {
    /**
     * Column holding our reference as echoed by the partner.
     * @default undefined (not in the report)
     */
    reference?: string;
    /**
     * Column holding the partner's own id (NSU, transaction id).
     * @default undefined (not in the report)
     */
    partnerReference?: string;
    /**
     * Column holding the amount.
     * @default undefined (not in the report)
     */
    amount?: string;
    /**
     * Column holding the ISO 4217 currency code, or `{ value: 'BRL' }` when the whole report is in
     * one currency that it does not spell out.
     * @default undefined (not in the report)
     */
    currency?: string | { value: string };
    /**
     * Column holding the execution time.
     * @default undefined (not in the report)
     */
    executedAt?: string;
    /**
     * Column naming the time zone each row's execution time is written in (Adyen's `TimeZone`): an
     * abbreviation with one meaning (`CET`, `CEST`: its fixed offset, which tells apart the two occurrences of
     * the hour repeated when summer time ends) or an IANA name (`Europe/Amsterdam`). A row whose zone is empty,
     * unknown or ambiguous (`IST`, `CST`) is rejected. See src/reports/rowTimeZone.ts.
     * @default undefined (times without an offset are read in the reconciler's `timezone`)
     */
    timeZone?: string;
    /**
     * The report's other amount for the row, kept beside it as evidence and never compared: e.g. the
     * settlement amount (after currency conversion) when `amount` is the presentment amount the customer
     * was charged. Read with the same separators, in major units.
     * @default undefined (not kept)
     */
    settlementAmount?: string;
    /** The currency of `settlementAmount`. @default undefined (not kept) */
    settlementCurrency?: string;
    /**
     * Column holding the partner's own id of the row itself, when the rows that are not executions carry
     * the id of the payment they are about as their partner reference (Adyen's refunds and chargebacks carry
     * the payment's `Psp Reference`, their own is `Modification Reference`; Stripe's carry `charge_id`, their
     * own is `balance_transaction_id`). Part of those rows' identity (src/reconcile/recordOtherRows.ts), so a
     * chargeback in one file and its reversal in a later one are two records, not a re-read of one.
     * Executions' identities never include it.
     * @default undefined (a reversal is known by its references and its occurrence in its file)
     */
    rowId?: string;
  };
  /**
   * How each row's kind (execution, reversal, failed, ignored) is read from its columns; see
   * {@link RowKindRule}. A value the rule does not know rejects the row.
   * @default undefined (every row is an execution)
   */
  kind?: RowKindRule;
  /**
   * How amounts are written besides their separators: minor units, a sign from an indicator column or
   * from which of two columns holds the amount, absolute values (see {@link AmountConvention}).
   * @default undefined (major units, the amount column carries its own sign)
   */
  amount?: AmountConvention;
  /**
   * Records of several types told apart by a record-type column: the header from one type, rows from
   * others, preamble, section headers, counts and footers around them (see {@link RecordLayout}).
   * @default undefined (the first record is the header, every other one a row)
   */
  records?: RecordLayout;
  /**
   * What the abbreviations in `columns.timeZone` mean in this partner's reports, where the built-in table
   * (src/reports/rowTimeZone.ts) leaves one out as ambiguous: `{ PST: 'UTC-8', PDT: 'UTC-7' }` for an
   * account on US Pacific time (`PST` is also Philippine time). Fixed offsets only.
   * @default undefined (the built-in table)
   */
  timeZoneAbbreviations?: Record<string, string>;
  /**
   * Whether a complete file ends with a line break. Then a last record without one is what a transfer still
   * in progress or cut short leaves (`...,order-2999` cut to `...,order-29` still has every field, and reads
   * as another reference or amount): it is a rejected row, "the file ends without a line break after line
   * N: it may be cut short", and the run proves nothing absent. `false` only for a partner documented to
   * omit the last line break: its last record is then read like any other.
   * @default true
   */
  finalLineBreak?: boolean;
  /**
   * Where the report states its merchant account, and which it must be (see {@link ReportAccount}): a file
   * of another account fails the run, naming the file, line and field.
   * @default undefined (the format states no account, or it is not checked)
   */
  account?: ReportAccount;
}

/** Our field names, in the order a row's fields are checked and reported. */
export const CSV_FIELDS = [
  'reference',
  'partnerReference',
  'amount',
  'currency',
  'executedAt',
  'timeZone',
  'settlementAmount',
  'settlementCurrency',
  'rowId',
] as const;
export type CsvField = (typeof CSV_FIELDS)[number];

/** {@link CsvSourceConfig} with defaults applied and every value checked. */
export interface ResolvedCsvSourceConfig {
  delimiter: string;
  quote: string;
  encoding: 'utf8' | 'latin1' | 'windows-1252';
  skipLines: number;
  decimalSeparator: string;
  thousandsSeparator: string | undefined;
  dateFormat: string | undefined;
  /** Header names of the mapped columns; the constant currency is not a column. */
  columns: Partial<Record<CsvField, string>>;
  /** Upper-cased constant currency, when the config gives one instead of a column. */
  currencyConstant: string | undefined;
  /** The rule for row kinds, when the config has one. */
  kind: RowKindRule | undefined;
  /** How amounts are written, when the config says more than the separators. */
  amount: AmountConvention | undefined;
  /** The record types, when the file has several. */
  records: RecordLayout | undefined;
  /** The source's own time-zone abbreviations, checked before the built-in table. */
  timeZoneAbbreviations: Readonly<Record<string, string>> | undefined;
  /** Whether a last record without a line break after it is rejected (see CsvSourceConfig.finalLineBreak). */
  finalLineBreak: boolean;
  /** Where the account is stated and what it must be, when the source says. */
  account: ReportAccount | undefined;
}

const ENCODINGS = ['utf8', 'latin1', 'windows-1252'] as const;

/**
 * Everything wrong with a CSV source's settings, each as `field: problem` text; empty when it is valid.
 * The reconciler's loader reports these with the rest of its file; {@link resolveCsvSourceConfig} refuses
 * a config with any.
 */
export function csvSourceProblems(config: CsvSourceConfig): string[] {
  return resolveParts(config).problems;
}

/**
 * Applies defaults and rejects a config that could only produce nonsense. Configs are usually loaded
 * from JSON or YAML, so the TypeScript type alone does not protect the reader; a bad config is the
 * operator's mistake, not the partner's, hence a plain `Error` rather than a ReportFormatError.
 */
export function resolveCsvSourceConfig(config: CsvSourceConfig): ResolvedCsvSourceConfig {
  const { problems, resolved } = resolveParts(config);
  if (problems.length > 0) {
    throw new Error(`invalid CSV source config for ${config.path}: ${problems.join('; ')}`);
  }
  return resolved;
}

function resolveParts(config: CsvSourceConfig): { problems: string[]; resolved: ResolvedCsvSourceConfig } {
  const problems: string[] = [];
  const delimiter = config.delimiter ?? ',';
  const quote = config.quote ?? '"';
  const encoding = config.encoding ?? 'utf8';
  const skipLines = config.skipLines ?? 0;
  const decimalSeparator = config.decimalSeparator ?? '.';
  const thousandsSeparator = config.thousandsSeparator === '' ? undefined : config.thousandsSeparator;

  if (delimiter.length === 0 || /[\r\n]/.test(delimiter)) {
    problems.push(`delimiter must be non-empty and not a line break, got ${JSON.stringify(delimiter)}`);
  }
  if ([...quote].length !== 1 || /[\r\n]/.test(quote)) {
    problems.push(`quote must be one character, got ${JSON.stringify(quote)}`);
  } else if (delimiter.includes(quote)) {
    problems.push(`quote ${JSON.stringify(quote)} cannot be part of the delimiter`);
  }
  if (!(ENCODINGS as readonly string[]).includes(encoding)) {
    problems.push(`encoding must be one of ${ENCODINGS.join(', ')}, got ${JSON.stringify(encoding)}`);
  }
  if (!Number.isSafeInteger(skipLines) || skipLines < 0) {
    problems.push(`skipLines must be a whole number >= 0, got ${JSON.stringify(skipLines)}`);
  }
  problems.push(...separatorProblems('decimalSeparator', decimalSeparator));
  // A separator that is also the delimiter would split every amount into two fields.
  if (delimiter === decimalSeparator) {
    problems.push(`decimalSeparator and delimiter are both ${JSON.stringify(delimiter)}`);
  }
  if (thousandsSeparator !== undefined && delimiter === thousandsSeparator) {
    problems.push(`thousandsSeparator and delimiter are both ${JSON.stringify(delimiter)}`);
  }
  if (thousandsSeparator !== undefined) {
    problems.push(...separatorProblems('thousandsSeparator', thousandsSeparator));
    if (thousandsSeparator === decimalSeparator) {
      problems.push(`thousandsSeparator and decimalSeparator are both ${JSON.stringify(decimalSeparator)}`);
    }
  }
  problems.push(...reportAccountProblems(config.account, config.records !== undefined));
  if (config.finalLineBreak !== undefined && typeof config.finalLineBreak !== 'boolean') {
    problems.push(`finalLineBreak must be true or false, got ${JSON.stringify(config.finalLineBreak)}`);
  }
  if (config.dateFormat !== undefined && config.dateFormat.trim() === '') {
    problems.push('dateFormat must not be empty (leave it out for ISO 8601)');
  }

  const columns: Partial<Record<CsvField, string>> = {};
  let currencyConstant: string | undefined;
  for (const field of CSV_FIELDS) {
    const mapped = config.columns?.[field];
    if (mapped === undefined) continue;
    if (field === 'currency' && typeof mapped === 'object' && mapped !== null) {
      currencyConstant = typeof mapped.value === 'string' ? mapped.value.trim().toUpperCase() : '';
      if (!/^[A-Z]{3}$/.test(currencyConstant)) {
        problems.push(
          `columns.currency.value must be a 3-letter ISO 4217 code, got ${JSON.stringify(mapped.value)}`,
        );
      }
    } else if (typeof mapped !== 'string' || mapped.trim() === '') {
      problems.push(`columns.${field} must be a non-empty header name, got ${JSON.stringify(mapped)}`);
    } else {
      columns[field] = mapped;
    }
  }
  if (columns.reference === undefined && columns.partnerReference === undefined) {
    problems.push('columns must map reference or partnerReference, or rows cannot be matched to intents');
  }

  if (columns.timeZone !== undefined && columns.executedAt === undefined) {
    problems.push('columns.timeZone names the zone of columns.executedAt, which is not mapped');
  }
  if (config.kind !== undefined) problems.push(...rowKindRuleProblems(config.kind, 'kind'));
  problems.push(...amountConventionProblems(config.amount, 'amount'));
  problems.push(...recordLayoutProblems(config.records, 'records'));
  problems.push(...timeZoneAbbreviationProblems(config.timeZoneAbbreviations, 'timeZoneAbbreviations'));
  if (config.timeZoneAbbreviations !== undefined && columns.timeZone === undefined) {
    problems.push('timeZoneAbbreviations reads the zones of columns.timeZone, which is not mapped');
  }
  if (config.amount?.debitCredit && columns.amount !== undefined) {
    problems.push('columns.amount and amount.debitCredit both say where the amount is: keep one');
  }

  return {
    problems,
    resolved: {
      delimiter,
      quote,
      encoding,
      skipLines,
      decimalSeparator,
      thousandsSeparator,
      dateFormat: config.dateFormat,
      columns,
      currencyConstant,
      kind: config.kind,
      amount: config.amount,
      records: config.records,
      timeZoneAbbreviations: config.timeZoneAbbreviations,
      finalLineBreak: config.finalLineBreak !== false,
      account: config.account,
    },
  };
}

/** A separator that is a digit or a sign would make amounts ambiguous. */
function separatorProblems(name: string, value: string): string[] {
  if ([...value].length !== 1) return [`${name} must be one character, got ${JSON.stringify(value)}`];
  if (/[0-9+-]/.test(value)) return [`${name} cannot be a digit or a sign, got ${JSON.stringify(value)}`];
  return [];
}
