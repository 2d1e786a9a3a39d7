import { createReadStream } from 'node:fs';
import { pipeline, Transform, type TransformCallback } from 'node:stream';
import { CsvError, type Options, parse } from 'csv-parse';
import iconv from 'iconv-lite';
import { Info } from 'luxon';
import {
  CSV_FIELDS,
  type CsvField,
  type CsvSourceConfig,
  type ResolvedCsvSourceConfig,
  resolveCsvSourceConfig,
} from './csvSourceConfig.js';
import { parseDecimal } from './parseDecimal.js';
import { parseExecutedAt } from './parseExecutedAt.js';
import type { PartnerRow, ReportItem } from './partnerRow.js';
import { ReportFormatError } from './reportFormatError.js';

/** A mapped cell longer than this is refused: no reference, amount or date is anywhere near it. */
export const MAX_FIELD_CHARS = 1024 * 1024;
/**
 * csv-parse stops on a record larger than this (in bytes). Such a record means a wrong delimiter or an
 * unclosed quote swallowing the rest of the file; the cap keeps memory bounded while it happens.
 */
export const MAX_RECORD_BYTES = 8 * 1024 * 1024;
/** Values quoted in a rejection reason are cut here, so one huge cell cannot flood logs and reviews. */
const REASON_VALUE_CHARS = 40;

/** What csv-parse hands to `on_record` with `raw: true` (its typings assume a bare record). */
interface RawRecord {
  record: string[];
  raw: string;
}

/** A record with the physical line where it starts. */
interface LocatedRecord {
  cells: string[];
  raw: string;
  line: number;
}

interface MappedColumn {
  field: CsvField;
  /** The header name in the file, used as `field` of rejections. */
  name: string;
  index: number;
}

interface HeaderLayout {
  width: number;
  /** Mapped columns in the order of {@link CSV_FIELDS}, which is the order rows are checked in. */
  columns: MappedColumn[];
  byField: Partial<Record<CsvField, MappedColumn>>;
}

interface RowContext {
  layout: HeaderLayout;
  settings: ResolvedCsvSourceConfig;
  timezone: string;
}

/**
 * Streams a partner's CSV report as parsed rows and rejections, in file order. Memory stays flat
 * whatever the file size: bytes flow from the file through the decoder and csv-parse one chunk at a
 * time, and nothing is collected. The caller decides what to do with rejections (count them against a
 * threshold, show them to finance); a file that cannot be read as a whole throws ReportFormatError.
 *
 * Each item carries the physical line where its record starts, counting skipped lines and the header,
 * so a finance person can open the file in an editor and find it.
 *
 * When it throws ReportFormatError, the items yielded before are in file order but not necessarily all
 * the records before the broken line (csv-parse drops what it parsed from the failing chunk). That is
 * fine because a broken file is unusable as a whole: the run must apply nothing from it.
 */
export async function* readCsvReport(
  file: string,
  config: CsvSourceConfig,
  options: { timezone: string },
): AsyncGenerator<ReportItem> {
  const settings = resolveCsvSourceConfig(config);
  if (!Info.normalizeZone(options.timezone).isValid) {
    throw new Error(`unknown time zone ${JSON.stringify(options.timezone)} for reading ${file}`);
  }

  // Advanced inside csv-parse as each record is parsed, not as it is consumed: when csv-parse fails,
  // records it already parsed may never reach the loop below, yet the error must name the right line.
  let nextLine = settings.skipLines + 1;
  const locate = ({ record, raw }: RawRecord): LocatedRecord => {
    const line = nextLine;
    nextLine += countLineBreaks(raw);
    return { cells: record, raw, line };
  };

  const source = createReadStream(file);
  const parser = parse({
    delimiter: settings.delimiter,
    quote: settings.quote,
    // csv-parse escapes with `"` by default even when another quote is configured; RFC 4180 doubling
    // of the configured quote is what exports do.
    escape: settings.quote,
    columns: false,
    relax_column_count: true,
    // Unquoted values lose surrounding whitespace (and spaces around quotes are allowed); quoted
    // values are kept exactly.
    trim: true,
    // `raw` rather than `info.lines`: csv-parse counts a CRLF inside a quoted field as two lines, and
    // its count restarts after our skipped lines. Counting line breaks in each record's raw text gives
    // the physical line in every case.
    raw: true,
    on_record: locate as unknown as Options['on_record'],
    max_record_size: MAX_RECORD_BYTES,
    // The decoder has already removed a UTF-8 BOM; a BOM-like sequence left now is data.
    bom: false,
  });
  // Errors of any stage (missing file, csv-parse) destroy the parser with that error, so the loop
  // below throws it; the callback has nothing left to do (it also sees our own early exits).
  pipeline(
    source,
    iconv.decodeStream(settings.encoding),
    new LineSkipper(settings.skipLines),
    parser,
    () => {},
  );

  let layout: HeaderLayout | undefined;
  try {
    for await (const { cells, raw, line } of parser as AsyncIterable<LocatedRecord>) {
      if (layout === undefined) {
        layout = readHeader(cells, raw, settings, file, line);
        continue;
      }
      // A line with no characters at all carries no data: exporters end files or separate sections with
      // blank lines, and skipping them loses nothing. Anything else (spaces, `""`, delimiters between
      // empty cells) is something the partner wrote, so it goes through the checks and is rejected if
      // it is not a valid row; it is never silently dropped.
      if (cells.length === 1 && cells[0] === '' && /^[\r\n]*$/.test(raw)) continue;
      yield toItem(cells, line, { layout, settings, timezone: options.timezone });
    }
  } catch (error) {
    if (error instanceof CsvError) throw formatErrorFromCsv(error, file, nextLine);
    throw error;
  } finally {
    // On an early exit (the consumer stopped iterating) the file must be closed now, not at GC time.
    source.destroy();
  }

  if (layout === undefined) {
    const detail =
      settings.skipLines > 0 && source.bytesRead > 0
        ? ` after skipping ${settings.skipLines} line(s): no header on line ${settings.skipLines + 1}`
        : '';
    throw new ReportFormatError(`${file}: file is empty${detail}`, { file });
  }
}

function readHeader(
  names: string[],
  raw: string,
  settings: ResolvedCsvSourceConfig,
  file: string,
  line: number,
): HeaderLayout {
  if (names.length === 1 && names[0] === '' && /^[\r\n]*$/.test(raw)) {
    throw new ReportFormatError(
      `${file}: header line ${line} is empty (is skipLines = ${settings.skipLines} right?)`,
      { file, line },
    );
  }
  const found = names.map((name) => (name === '' ? '""' : name)).join(', ');
  const missing: string[] = [];
  const missingNames: string[] = [];
  const columns: MappedColumn[] = [];
  const byField: Partial<Record<CsvField, MappedColumn>> = {};
  for (const field of CSV_FIELDS) {
    const name = settings.columns[field];
    if (name === undefined) continue;
    const index = names.indexOf(name);
    if (index === -1) {
      missing.push(`"${name}" (${field})`);
      missingNames.push(name);
      continue;
    }
    const count = names.filter((candidate) => candidate === name).length;
    if (count > 1) {
      // Picking one of the two would be a guess about which one the partner meant.
      throw new ReportFormatError(
        `${file}: column "${name}" (${field}) appears ${count} times in header; found: ${found}`,
        { file, line, field: name },
      );
    }
    const column = { field, name, index };
    columns.push(column);
    byField[field] = column;
  }
  if (missing.length > 0) {
    const subject = missing.length === 1 ? 'column' : 'columns';
    throw new ReportFormatError(
      `${file}: ${subject} ${missing.join(', ')} not found in header; found: ${found}`,
      { file, line, field: missingNames.join(', ') },
    );
  }
  return { width: names.length, columns, byField };
}

function toItem(cells: string[], line: number, context: RowContext): ReportItem {
  const { layout, settings } = context;
  const reject = (field: string, reason: string): ReportItem => ({
    kind: 'rejected',
    rejected: { line, field, reason },
  });

  if (cells.length !== layout.width) {
    // Cells would be shifted; reading them by position would put values under the wrong column.
    return reject('*', `expected ${layout.width} fields as in the header, found ${cells.length}`);
  }
  for (const column of layout.columns) {
    const problem = cellProblem(cells[column.index]!, settings.encoding);
    if (problem !== undefined) return reject(column.name, problem);
  }

  const cell = (field: CsvField): string | undefined => {
    const column = layout.byField[field];
    return column === undefined ? undefined : cells[column.index];
  };
  const nameOf = (field: CsvField): string => layout.byField[field]!.name;

  const reference = cell('reference') || null;
  const partnerReference = cell('partnerReference') || null;
  if (reference === null && partnerReference === null) {
    const field = layout.byField.reference === undefined ? 'partnerReference' : 'reference';
    return reject(nameOf(field), 'no reference and no partner reference');
  }

  // Typed values are trimmed even when quoted: whitespace is never part of an amount, code or time.
  let amount: string | null = null;
  const amountText = cell('amount')?.trim();
  if (amountText !== undefined) {
    const parsed = parseDecimal(amountText, settings);
    if (!parsed.ok)
      return reject(nameOf('amount'), `${show(amountText)} is not a valid amount: ${parsed.reason}`);
    amount = parsed.value;
  }

  let currency: string | null = settings.currencyConstant ?? null;
  const currencyText = cell('currency')?.trim();
  if (currencyText !== undefined) {
    currency = currencyText.toUpperCase();
    if (!/^[A-Z]{3}$/.test(currency)) {
      return reject(nameOf('currency'), `${show(currencyText)} is not a 3-letter ISO 4217 currency code`);
    }
  }

  let executedAt: Date | null = null;
  const executedAtText = cell('executedAt')?.trim();
  if (executedAtText !== undefined) {
    const parsed = parseExecutedAt(executedAtText, {
      dateFormat: settings.dateFormat,
      timezone: context.timezone,
    });
    if (!parsed.ok) {
      return reject(
        nameOf('executedAt'),
        `${show(executedAtText)} is not a valid date-time: ${parsed.reason}`,
      );
    }
    executedAt = parsed.value;
  }

  const row: PartnerRow = { line, reference, partnerReference, amount, currency, executedAt };
  return { kind: 'row', row };
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

/** `\r\n`, `\r` and `\n` each end one physical line, as an editor shows them. */
export function countLineBreaks(text: string): number {
  let breaks = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 10) {
      breaks++;
    } else if (code === 13) {
      breaks++;
      if (text.charCodeAt(i + 1) === 10) i++;
    }
  }
  return breaks;
}

function formatErrorFromCsv(error: CsvError, file: string, recordLine: number): ReportFormatError {
  // csv-parse's own line numbers are not physical lines (see `raw` above), so it is located from the
  // start of the failing record plus the line breaks read before the failure.
  const rawSoFar = typeof error.raw === 'string' ? error.raw : '';
  const at = recordLine + countLineBreaks(rawSoFar);
  switch (error.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return new ReportFormatError(
        `${file}: line ${recordLine}: unterminated quote: a quoted field in the record starting on this line is never closed`,
        { file, line: recordLine },
      );
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return new ReportFormatError(
        `${file}: line ${at}: unexpected text after a closing quote (a quote inside a quoted field must be doubled)`,
        { file, line: at },
      );
    case 'INVALID_OPENING_QUOTE':
      return new ReportFormatError(
        `${file}: line ${at}: quote inside an unquoted field (such a field must be quoted and its quotes doubled)`,
        { file, line: at },
      );
    case 'CSV_MAX_RECORD_SIZE':
      return new ReportFormatError(
        `${file}: line ${recordLine}: record is larger than ${MAX_RECORD_BYTES / 1024 / 1024} MB; ` +
          'is the delimiter right, or is a quote left open?',
        { file, line: recordLine },
      );
    default:
      return new ReportFormatError(`${file}: line ${at}: ${error.message}`, { file, line: at });
  }
}

/**
 * Drops the first `count` physical lines of decoded text, whatever they contain: report titles and
 * periods are free text, and letting csv-parse read them (its `from_line`) would fail on a stray
 * quote in a title.
 */
class LineSkipper extends Transform {
  private remaining: number;
  /** A `\r` ended the last skipped line; a `\n` right after it belongs to the same line break. */
  private afterCr = false;

  constructor(count: number) {
    super({ decodeStrings: false, encoding: 'utf8' });
    this.remaining = count;
  }

  override _transform(chunk: string | Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    if (this.remaining > 0 || this.afterCr) {
      let i = 0;
      for (; i < text.length; i++) {
        const char = text[i];
        if (this.afterCr) {
          this.afterCr = false;
          if (char === '\n') continue;
        }
        if (this.remaining === 0) break;
        if (char === '\n') {
          this.remaining--;
        } else if (char === '\r') {
          this.remaining--;
          this.afterCr = true;
        }
      }
      text = text.slice(i);
    }
    if (text.length > 0) this.push(text);
    callback();
  }
}
