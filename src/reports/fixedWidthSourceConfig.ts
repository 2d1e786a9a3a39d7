import type { AmountConvention } from './amountConvention.js';
import { type CsvSourceConfig, csvSourceProblems } from './csvSourceConfig.js';
import { kindColumns, type RowKindRule } from './rowKind.js';

/**
 * One field of a fixed-width record, as specs write them: a 1-based start position and a length, under the
 * spec's own name (which rejections then name).
 */
export interface FixedWidthField {
  name: string;
  /** 1-based position of the field's first character. */
  start: number;
  /** Number of characters. */
  length: number;
  /**
   * The field is an unsigned number of this many implied decimals (`0000000002500` with 2 is `25.00`): every
   * character must be a digit, or the row is rejected naming the field. Its sign, if any, is in another field
   * (see `amount.sign` of the record layout).
   * @default undefined (the text is read as written)
   */
  impliedDecimals?: number;
}

/** How the records of one type are read. */
export interface FixedWidthRecordLayout {
  /** The record's fields, as the spec lists them; only those the layout maps are read and checked. */
  fields: readonly FixedWidthField[];
  /**
   * Records of this type say nothing about an intent (batch summaries, fees): each is counted as an `ignored`
   * row. Their fields can still be inherited by later records (see `inherit`).
   * @default false
   */
  ignored?: boolean;
  /**
   * Fields of the latest record of another type read before this one, read as if they were this record's:
   * e.g. the kind of transaction and the adjustment code of the batch summary (Cielo's RO, type 1) that a
   * sale record (type 2) belongs to. A record with no such record before it is rejected.
   *
   * `key` maps fields of this record to fields of that one which must hold the same text (Cielo's CV names
   * its RO in `Número do RO`): the latest record of that type is then only this record's own when they agree,
   * and a record naming another one (a cancellation RO's CV placed after a sales RO) is rejected naming the
   * field, never read with the wrong record's fields.
   * @default undefined
   */
  inherit?: { from: string; fields: readonly string[]; key?: Readonly<Record<string, string>> };
  /** Maps our fields to field names, as a CSV source's `columns` maps them to header names. */
  columns?: {
    reference?: string;
    partnerReference?: string;
    amount?: string;
    /** A field holding the ISO 4217 code, or `{ value: 'BRL' }` when the whole file is in one currency. */
    currency?: string | { value: string };
    settlementAmount?: string;
    settlementCurrency?: string;
  };
  /**
   * The execution time, from a date field and an optional time field, each with its own luxon format (specs
   * write them apart: `yyyyMMdd` and `HHmmss`). Times are read in the reconciler's time zone.
   * @default undefined (no execution time)
   */
  executedAt?: { date: string; dateFormat: string; time?: string; timeFormat?: string };
  /** Row kinds from this record's (or inherited) fields; see {@link RowKindRule}. @default every record an execution */
  kind?: RowKindRule;
  /** How amounts are written (see {@link AmountConvention}); a sign position is `sign: { column: '<field name>', ... }`. */
  amount?: AmountConvention;
}

/**
 * A fixed-width report (one record per line, every record of `recordLength` characters, fields by position),
 * with several record types told apart by a code at a fixed position: a header, detail records of several
 * layouts, a trailer that counts them. E.g. Cielo's Extrato Eletrônico (reconcilers/cielo.ts).
 *
 * Structural problems fail the whole file, so the run applies nothing: a record of another length, a first
 * record that is not the header, a header that says another kind of file (`header.expect`), a record after
 * the trailer (blank lines and a DOS end-of-file mark, Ctrl-Z, alone on its line are read past), a file that
 * ends without its trailer (cut in transit), a trailer whose count is not what was read. A record of a type the layout does not know is a rejected row (naming `recordType.name`) that says
 * nothing about whom it concerns, so the run proves nothing absent.
 */
export interface FixedWidthSourceConfig {
  type: 'fixedWidth';
  /** The report file, or a glob matching several files. */
  path: string;
  /**
   * Character encoding. Positions count characters; with Latin-1 one byte is one character, which is what
   * specs counting bytes mean.
   * @default 'latin1'
   */
  encoding?: 'utf8' | 'latin1' | 'windows-1252';
  /** Every record's length in characters, without its line end. */
  recordLength: number;
  /** Where the record-type code is, and its name in the spec. */
  recordType: { name: string; start: number; length: number };
  /**
   * The header record: the file's first record. `period` names its fields holding the first and last day the
   * file is complete for, in `dateFormat` (whole days in the reconciler's time zone, the last one included):
   * the report's declared coverage. `expect` lists accepted values of header fields (a payments file given as
   * the sales file fails).
   * @default undefined (no header record)
   */
  header?: {
    type: string;
    fields: readonly FixedWidthField[];
    period?: { from: string; to: string; dateFormat: string };
    expect?: Record<string, readonly string[]>;
  };
  /**
   * The trailer record: the file's last record, whose `count` field is the number of records between the
   * header and the trailer.
   * @default undefined (no trailer: a cut file cannot be told from a complete one)
   */
  trailer?: { type: string; count: FixedWidthField };
  /** The layout of each other record type, by its code. */
  records: Record<string, FixedWidthRecordLayout>;
}

/**
 * Everything wrong with a fixed-width source's settings, each as `field: problem` text (without the
 * `source.` prefix); empty when it is valid.
 */
export function fixedWidthSourceProblems(config: FixedWidthSourceConfig): string[] {
  const problems: string[] = [];
  const length = config.recordLength;
  if (!Number.isSafeInteger(length) || length < 1) {
    problems.push(`recordLength must be a whole number of characters >= 1, got ${JSON.stringify(length)}`);
  }
  const encoding = config.encoding ?? 'latin1';
  if (!['utf8', 'latin1', 'windows-1252'].includes(encoding)) {
    problems.push(`encoding must be one of utf8, latin1, windows-1252, got ${JSON.stringify(encoding)}`);
  }
  const fits = (field: unknown, where: string) => fieldProblems(field, where, length, problems);
  const recordType = config.recordType;
  fits(recordType, 'recordType');
  const codeLength = isObject(recordType) ? recordType.length : undefined;
  const code = (type: unknown, where: string) => {
    if (typeof type !== 'string' || type.length !== codeLength) {
      problems.push(
        `${where} must be a record-type code of ${codeLength} character(s), got ${JSON.stringify(type)}`,
      );
    }
  };

  const header = config.header;
  if (header !== undefined) {
    if (!isObject(header)) problems.push('header must be { type, fields, period?, expect? }');
    else {
      code(header.type, 'header.type');
      const names = fieldList(header.fields, 'header.fields', fits, problems);
      if (header.period !== undefined) {
        const period = header.period;
        if (!isObject(period) || typeof period.dateFormat !== 'string' || period.dateFormat === '') {
          problems.push('header.period must be { from, to, dateFormat } naming header fields');
        } else {
          for (const end of ['from', 'to'] as const) {
            if (!names.includes(period[end])) {
              problems.push(
                `header.period.${end} ${JSON.stringify(period[end])} is not a field of header.fields`,
              );
            }
          }
        }
      }
      if (header.expect !== undefined) {
        if (!isObject(header.expect))
          problems.push('header.expect must map header field names to lists of values');
        else {
          for (const [name, values] of Object.entries(header.expect)) {
            if (!names.includes(name))
              problems.push(`header.expect: ${JSON.stringify(name)} is not a field of header.fields`);
            if (!Array.isArray(values) || values.length === 0 || values.some((v) => typeof v !== 'string')) {
              problems.push(`header.expect[${JSON.stringify(name)}] must list at least one value`);
            }
          }
        }
      }
    }
  }
  const trailer = config.trailer;
  if (trailer !== undefined) {
    if (!isObject(trailer)) problems.push('trailer must be { type, count }');
    else {
      code(trailer.type, 'trailer.type');
      fits(trailer.count, 'trailer.count');
    }
  }

  if (!isObject(config.records) || Object.keys(config.records).length === 0) {
    problems.push('records must give the layout of at least one record type, by its code');
    return problems;
  }
  for (const [type, layout] of Object.entries(config.records)) {
    const where = `records[${JSON.stringify(type)}]`;
    code(type, `${where} (its key)`);
    if (type === header?.type || type === trailer?.type) {
      problems.push(`${where}: the header's or the trailer's type cannot also be a detail record`);
    }
    if (!isObject(layout)) {
      problems.push(`${where} must be { fields, columns, ... } or { fields, ignored: true }`);
      continue;
    }
    const own = fieldList(layout.fields, `${where}.fields`, fits, problems);
    let inherited: string[] = [];
    if (layout.inherit !== undefined) {
      const from = layout.inherit.from;
      const parent = isObject(config.records) ? config.records[from] : undefined;
      if (parent === undefined || from === type) {
        problems.push(
          `${where}.inherit.from must name another record type of records, got ${JSON.stringify(from)}`,
        );
      } else {
        const parentNames = (parent.fields ?? []).map((field) => field.name);
        inherited = [...(layout.inherit.fields ?? [])];
        for (const name of inherited) {
          if (!parentNames.includes(name)) {
            problems.push(
              `${where}.inherit.fields: ${JSON.stringify(name)} is not a field of records[${JSON.stringify(from)}]`,
            );
          }
          if (own.includes(name))
            problems.push(`${where}.inherit.fields: ${JSON.stringify(name)} is also a field of its own`);
        }
        const key = layout.inherit.key;
        if (key !== undefined) {
          if (!isObject(key) || Object.keys(key).length === 0) {
            problems.push(
              `${where}.inherit.key must map fields of this record to fields of records[${JSON.stringify(from)}] they must equal`,
            );
          } else {
            for (const [name, parentName] of Object.entries(key)) {
              if (!own.includes(name))
                problems.push(`${where}.inherit.key: ${JSON.stringify(name)} is not a field of this record`);
              const parentField = (parent.fields ?? []).find(
                (field: { name?: unknown }) => field.name === parentName,
              );
              if (parentField === undefined) {
                problems.push(
                  `${where}.inherit.key[${JSON.stringify(name)}]: ${JSON.stringify(parentName)} is not a field of records[${JSON.stringify(from)}]`,
                );
              } else {
                const ownField = layout.fields.find((field: { name?: unknown }) => field.name === name);
                if (ownField !== undefined && ownField.length !== parentField.length) {
                  problems.push(
                    `${where}.inherit.key[${JSON.stringify(name)}]: the two fields differ in length (${ownField.length} and ${parentField.length}), so they can never be equal`,
                  );
                }
              }
            }
          }
        }
      }
    }
    if (layout.ignored === true) continue;
    const csv = asCsvConfig(config, layout);
    if (
      csv.columns.executedAt === undefined &&
      layout.executedAt !== undefined &&
      !isObject(layout.executedAt)
    ) {
      problems.push(`${where}.executedAt must be { date, dateFormat, time?, timeFormat? }`);
    }
    problems.push(...csvSourceProblems(csv).map((problem) => `${where}.${problem}`));
    // Every name the layout reads must be one of its fields (or an inherited one).
    const known = [...own, ...inherited];
    const read = [
      ...Object.entries(layout.columns ?? {})
        .filter(([, name]) => typeof name === 'string')
        .map(([field, name]) => [`columns.${field}`, name as string]),
      ...(layout.kind ? kindColumns(layout.kind).map((name) => ['kind', name]) : []),
      ...(layout.amount?.sign ? [['amount.sign.column', layout.amount.sign.column]] : []),
      ...(layout.amount?.debitCredit
        ? [
            ['amount.debitCredit.debit', layout.amount.debitCredit.debit],
            ['amount.debitCredit.credit', layout.amount.debitCredit.credit],
          ]
        : []),
      ...(layout.executedAt?.date ? [['executedAt.date', layout.executedAt.date]] : []),
      ...(layout.executedAt?.time ? [['executedAt.time', layout.executedAt.time]] : []),
    ];
    for (const [setting, name] of read) {
      if (!known.includes(name!)) {
        problems.push(
          `${where}.${setting}: ${JSON.stringify(name)} is not a field of this record (nor inherited)`,
        );
      }
    }
    if (layout.executedAt?.time !== undefined && !layout.executedAt.timeFormat) {
      problems.push(`${where}.executedAt.timeFormat is needed with executedAt.time`);
    }
  }
  return problems;
}

/** The name under which a record's date and time fields are read together (and which rejections name). */
export function executedAtName(layout: FixedWidthRecordLayout): string | undefined {
  const at = layout.executedAt;
  if (!at) return undefined;
  return at.time === undefined ? at.date : `${at.date} + ${at.time}`;
}

/**
 * A data record's layout as the CSV source config whose rows it reads like: its field names are the header,
 * so the checks, rejections and conventions of CSV rows apply to it unchanged (src/reports/toItem.ts).
 */
export function asCsvConfig(config: FixedWidthSourceConfig, layout: FixedWidthRecordLayout): CsvSourceConfig {
  const at = layout.executedAt;
  return {
    type: 'csv',
    path: config.path,
    encoding: config.encoding ?? 'latin1',
    columns: { ...(layout.columns ?? {}), executedAt: executedAtName(layout) },
    dateFormat: at
      ? at.time === undefined
        ? at.dateFormat
        : `${at.dateFormat} ${at.timeFormat}`
      : undefined,
    kind: layout.kind,
    amount: layout.amount,
  };
}

function fieldList(
  fields: unknown,
  where: string,
  fits: (field: unknown, where: string) => void,
  problems: string[],
): string[] {
  if (!Array.isArray(fields)) {
    problems.push(`${where} must list the record's fields as { name, start, length }`);
    return [];
  }
  const names: string[] = [];
  fields.forEach((field, index) => {
    fits(field, `${where}[${index}]`);
    if (isObject(field) && typeof field.name === 'string') {
      if (names.includes(field.name))
        problems.push(`${where}: two fields are named ${JSON.stringify(field.name)}`);
      names.push(field.name);
    }
  });
  return names;
}

function fieldProblems(field: unknown, where: string, recordLength: number, problems: string[]): void {
  if (!isObject(field)) {
    problems.push(`${where} must be { name, start, length }`);
    return;
  }
  if (typeof field.name !== 'string' || field.name.trim() === '')
    problems.push(`${where}.name must be the spec's field name`);
  const { start, length } = field;
  if (!Number.isSafeInteger(start) || start < 1 || !Number.isSafeInteger(length) || length < 1) {
    problems.push(`${where}: start and length must be whole numbers >= 1 (1-based, as specs write them)`);
  } else if (Number.isSafeInteger(recordLength) && start + length - 1 > recordLength) {
    problems.push(
      `${where} (${field.name}) ends at ${start + length - 1}, past the record length ${recordLength}`,
    );
  }
  const decimals = field.impliedDecimals;
  if (decimals !== undefined && (!Number.isSafeInteger(decimals) || decimals < 0 || decimals >= length)) {
    problems.push(`${where}.impliedDecimals must be a whole number from 0 to the field's length - 1`);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: settings are checked from untyped module exports.
function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
