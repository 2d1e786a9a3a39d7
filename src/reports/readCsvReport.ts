import { createReadStream } from 'node:fs';
import { pipeline, Readable } from 'node:stream';
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
import type { PartnerRow, RejectedRow, ReportItem } from './partnerRow.js';
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
/**
 * Every line end outside quotes ends a record, whichever kind it is: a file edited or concatenated by hand
 * can mix CRLF, LF and CR, and csv-parse's default (the first line end of the file, then only that kind)
 * would read the rows after another kind as data of one long record. These are the line ends
 * {@link countLineBreaks} counts, so line numbers stay physical. `\r\n` comes before `\r`: csv-parse
 * takes the first that matches, and holds a chunk's last bytes back until the next chunk arrives, so a CR
 * and an LF in different chunks are still one line end.
 */
const RECORD_DELIMITERS = ['\r\n', '\n', '\r'];

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

/** What reading one file has found so far, shared by the fast splitter and csv-parse. */
interface ReadState {
  file: string;
  settings: ResolvedCsvSourceConfig;
  timezone: string;
  layout: HeaderLayout | undefined;
  context: RowContext | undefined;
  /** Physical line where the next record starts. */
  nextLine: number;
}

/**
 * Streams a partner's CSV report as parsed rows and rejections, in file order. Memory stays flat
 * whatever the file size: bytes flow from the file through the decoder and the parser one chunk at a
 * time, and nothing is collected. The caller decides what to do with rejections (count them against a
 * threshold, show them to finance); a file that cannot be read as a whole throws ReportFormatError.
 *
 * Each item carries the physical line where its record starts, counting skipped lines and the header,
 * so a finance person can open the file in an editor and find it.
 *
 * When it throws ReportFormatError, the items yielded before are in file order but not necessarily all
 * the records before the broken line (csv-parse drops what it parsed from the failing chunk). That is
 * fine because a broken file is unusable as a whole: the run must apply nothing from it.
 *
 * One item at a time; {@link readCsvReportBatches} gives the same items an array at a time, which is what
 * large reports should use (an `await` per row costs more than reading the row).
 */
export async function* readCsvReport(
  file: string,
  config: CsvSourceConfig,
  options: { timezone: string },
): AsyncGenerator<ReportItem> {
  for await (const batch of readCsvReportBatches(file, config, options)) yield* batch;
}

/**
 * {@link readCsvReport}, an array of items per chunk read from the file (64 KiB, about a thousand rows of
 * a typical report); never an empty array.
 *
 * Records are split by a fast path written for the shape almost every export has: no quote character, so
 * fields are the text between delimiters, trimmed, exactly as csv-parse (with the options below) would
 * give them. From the first chunk that has a quote character (or a record over
 * {@link FAST_RECORD_MAX_CHARS} long) to the end of the file, records go through csv-parse itself, started
 * at a record boundary. Both end a record at every line end outside quotes ({@link RECORD_DELIMITERS}),
 * whichever the file's first line used. csv-parse alone reads about 120k records/s on the benchmark
 * machine, the fast path about 1.3M, and the per-row checks after it were rewritten to match (see
 * parseDecimal and parseExecutedAt): reading the benchmark's 1M-row acme-pay file went from 37.6 s
 * (26k rows/s) to 3.1-3.3 s (300-330k rows/s), at 91 MB of RSS instead of 131.
 */
export async function* readCsvReportBatches(
  file: string,
  config: CsvSourceConfig,
  options: { timezone: string },
): AsyncGenerator<ReportItem[]> {
  const settings = resolveCsvSourceConfig(config);
  if (!Info.normalizeZone(options.timezone).isValid) {
    throw new Error(`unknown time zone ${JSON.stringify(options.timezone)} for reading ${file}`);
  }
  const state: ReadState = {
    file,
    settings,
    timezone: options.timezone,
    layout: undefined,
    context: undefined,
    nextLine: settings.skipLines + 1,
  };

  const source = createReadStream(file);
  const texts = decodedText(source, settings)[Symbol.asyncIterator]();
  try {
    const splitter = new FastSplitter(settings.delimiter, settings.quote);
    let rest: string | undefined;
    for (;;) {
      const next = await texts.next();
      const items: ReportItem[] = [];
      rest = splitter.split(next.done ? '' : next.value, next.done === true, (cells, raw, breaks) => {
        const line = state.nextLine;
        state.nextLine += breaks;
        addRecord(state, cells, raw, line, items, true);
      });
      if (items.length > 0) yield items;
      if (rest !== undefined || next.done) break;
    }
    if (rest !== undefined) {
      for await (const items of readWithCsvParse(rest, texts, state)) yield items;
    }
  } catch (error) {
    if (error instanceof CsvError) throw formatErrorFromCsv(error, file, state.nextLine);
    throw error;
  } finally {
    // On an early exit (the consumer stopped iterating) the file must be closed now, not at GC time.
    source.destroy();
  }

  if (state.layout === undefined) {
    const detail =
      settings.skipLines > 0 && source.bytesRead > 0
        ? ` after skipping ${settings.skipLines} line(s): no header on line ${settings.skipLines + 1}`
        : '';
    throw new ReportFormatError(`${file}: file is empty${detail}`, { file });
  }
}

/** The file's text, decoded and without the skipped lines, a chunk at a time. */
async function* decodedText(source: AsyncIterable<Buffer>, settings: ResolvedCsvSourceConfig) {
  // The same decoder as iconv.decodeStream (a UTF-8 byte order mark is removed, invalid bytes become
  // U+FFFD), without a stream per stage. Latin-1 maps every byte to the code point of the same value,
  // which Node does natively; iconv-lite does it with a table in JS (0.9 s of a 1M-row file).
  const decoder: { write(chunk: Buffer): string; end(): string | undefined } =
    settings.encoding === 'latin1'
      ? { write: (chunk) => chunk.toString('latin1'), end: () => undefined }
      : iconv.getDecoder(settings.encoding);
  const skipper = new LineSkipper(settings.skipLines);
  for await (const chunk of source) {
    const text = skipper.take(decoder.write(chunk));
    if (text.length > 0) yield text;
  }
  const tail = skipper.take(decoder.end() ?? '');
  if (tail.length > 0) yield tail;
}

/** One record, however it was split: the header, a blank line to skip, or a row to check. */
function addRecord(
  state: ReadState,
  cells: string[],
  raw: string,
  line: number,
  items: ReportItem[],
  fast: boolean,
): void {
  if (state.layout === undefined) {
    if (fast) for (let i = 0; i < cells.length; i++) cells[i] = cells[i]!.trim();
    state.layout = readHeader(cells, raw, state.settings, state.file, line);
    state.context = { layout: state.layout, settings: state.settings, timezone: state.timezone };
    return;
  }
  // A line with no characters at all carries no data: exporters end files or separate sections with
  // blank lines, and skipping them loses nothing. Anything else (spaces, `""`, delimiters between
  // empty cells) is something the partner wrote, so it goes through the checks and is rejected if
  // it is not a valid row; it is never silently dropped.
  if (cells.length === 1 && (fast ? cells[0]!.trim() : cells[0]) === '' && /^[\r\n]*$/.test(raw)) return;
  if (fast) {
    // Fast-path cells are unquoted, and csv-parse trims unquoted values: only the mapped ones are read.
    for (const column of state.layout.columns) {
      const value = cells[column.index];
      if (value !== undefined) cells[column.index] = value.trim();
    }
  }
  items.push(toItem(cells, line, state.context!));
}

/**
 * The rest of the file through csv-parse, from the start of a record: `first`, then whatever `texts` still
 * has. Yields the items of each chunk of records.
 */
async function* readWithCsvParse(
  first: string,
  texts: AsyncIterator<string>,
  state: ReadState,
): AsyncGenerator<ReportItem[]> {
  // Advanced inside csv-parse as each record is parsed, not as it is consumed: when csv-parse fails,
  // records it already parsed may never reach the loop below, yet the error must name the right line.
  const locate = ({ record, raw }: RawRecord): LocatedRecord => {
    const line = state.nextLine;
    state.nextLine += countLineBreaks(raw);
    return { cells: record, raw, line };
  };
  const settings = state.settings;
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
    // Not csv-parse's default (the first line end of the file, then only that one): see RECORD_DELIMITERS.
    record_delimiter: RECORD_DELIMITERS,
  });
  async function* remaining() {
    yield first;
    for (;;) {
      const next = await texts.next();
      if (next.done) return;
      yield next.value;
    }
  }
  // Errors of any stage (reading the file, csv-parse) destroy the parser with that error, so the loop
  // below throws it; the callback has nothing left to do (it also sees our own early exits).
  pipeline(Readable.from(remaining()), parser, () => {});
  try {
    let items: ReportItem[] = [];
    for await (const { cells, raw, line } of parser as AsyncIterable<LocatedRecord>) {
      addRecord(state, cells, raw, line, items, false);
      if (items.length >= CSV_PARSE_BATCH) {
        yield items;
        items = [];
      }
    }
    if (items.length > 0) yield items;
  } finally {
    parser.destroy();
  }
}

/** Items per batch while csv-parse reads (it hands records over one at a time). */
const CSV_PARSE_BATCH = 1_000;

/**
 * The fast path of {@link readCsvReportBatches}: cuts decoded text into records at every line end (`\r\n`,
 * `\n` or `\r`, see {@link RECORD_DELIMITERS}) and records into cells at the delimiter, as long as the text
 * has no quote character and records are at most {@link FAST_RECORD_MAX_CHARS} long. Without quotes
 * csv-parse (with the options of readWithCsvParse) does exactly this: a field is the text between
 * delimiters, trimmed (its trim characters are those of `String.prototype.trim`); a record ends at the
 * first line end; the last record of the file is emitted when it has a delimiter or a non-blank character.
 * Cells come untrimmed: the caller trims the ones it reads. The raw text handed on is the record without
 * its line end: it is only tested for holding nothing but line breaks, which the line end does not change,
 * and one string less per row is one less thing to collect.
 */
class FastSplitter {
  private carry = '';

  constructor(
    private readonly delimiter: string,
    private readonly quote: string,
  ) {}

  /**
   * Emits every complete record of the text seen so far (`end`: and the last one). Returns undefined, or,
   * when csv-parse must take over, the text from the start of the first record not emitted.
   *
   * A chunk with a quote character anywhere goes to csv-parse whole, from the start of the record it
   * began in (the text carried over from the previous chunk), not only from the quoted record on: when
   * csv-parse fails on a chunk, the records it parsed from that chunk never reach the reader (see
   * readCsvReport), and which error a broken file reports depends on it (a binary file's header line is
   * "missing columns" to the fast path but never read by csv-parse, which fails on line 2 first).
   */
  split(
    text: string,
    end: boolean,
    emit: (cells: string[], raw: string, lineBreaks: number) => void,
  ): string | undefined {
    const buffer = this.carry.length === 0 ? text : this.carry + text;
    this.carry = '';
    if (buffer.includes(this.quote)) return buffer;
    // The next LF and CR at or after `position` (-1: none left in the buffer). Each is searched for again
    // only once passed, so a file with one kind of line end looks for the other once per chunk.
    let lf = buffer.indexOf('\n');
    let cr = buffer.indexOf('\r');
    let position = 0;
    for (;;) {
      if (lf !== -1 && lf < position) lf = buffer.indexOf('\n', position);
      if (cr !== -1 && cr < position) cr = buffer.indexOf('\r', position);
      let stop: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        if (lf === -1) break;
        stop = lf;
        next = lf + 1;
      } else {
        // A CR that ends the text may be the first half of a CRLF whose LF comes with the next chunk.
        if (cr === buffer.length - 1 && !end) break;
        stop = cr;
        next = lf === cr + 1 ? cr + 2 : cr + 1;
      }
      if (stop - position > FAST_RECORD_MAX_CHARS) return buffer.slice(position);
      const record = buffer.slice(position, stop);
      emit(record.split(this.delimiter), record, 1);
      position = next;
    }
    const rest = position === 0 ? buffer : buffer.slice(position);
    if (end) return this.last(rest, emit);
    if (rest.length > FAST_RECORD_MAX_CHARS) return rest;
    this.carry = rest;
    return undefined;
  }

  /** The text after the last line end of the file (it has no quote and no line break: see split). */
  private last(
    rest: string,
    emit: (cells: string[], raw: string, lineBreaks: number) => void,
  ): string | undefined {
    if (rest.length > FAST_RECORD_MAX_CHARS) return rest;
    if (rest.trim() !== '' || rest.includes(this.delimiter)) {
      emit(rest.split(this.delimiter), rest, 0);
    }
    return undefined;
  }
}

/**
 * Records longer than this (in UTF-16 units) go to csv-parse: at most 3 UTF-8 bytes per unit keeps every
 * fast-path record under csv-parse's {@link MAX_RECORD_BYTES}, which csv-parse then enforces on the rest.
 */
const FAST_RECORD_MAX_CHARS = 2 * 1024 * 1024;

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
  const reference = (referenceColumn && cells[referenceColumn.index]) || null;
  const partnerReference = (partnerColumn && cells[partnerColumn.index]) || null;
  for (const column of layout.columns) {
    const problem = cellProblem(cells[column.index]!, settings.encoding);
    if (problem === undefined) continue;
    // A garbled identifier could be anyone's; with readable ones the rejection still names its intent.
    const readable = !identifierProblem(cells, layout, settings.encoding);
    return reject(line, column.name, problem, readable ? { reference, partnerReference } : undefined);
  }
  const identifiers = { reference, partnerReference };
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
  let amountValue: string | null = null;
  if (amount !== undefined) {
    const text = cells[amount.index]!.trim();
    const parsed = parseDecimal(text, settings);
    if (!parsed.ok)
      return reject(line, amount.name, `${show(text)} is not a valid amount: ${parsed.reason}`, identifiers);
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

  let executedAtValue: Date | null = null;
  if (executedAt !== undefined) {
    const text = cells[executedAt.index]!.trim();
    const parsed = parseExecutedAt(text, { dateFormat: settings.dateFormat, timezone: context.timezone });
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
class LineSkipper {
  private remaining: number;
  /** A `\r` ended the last skipped line; a `\n` right after it belongs to the same line break. */
  private afterCr = false;

  constructor(count: number) {
    this.remaining = count;
  }

  /** What is left of `text` once the lines still to skip are gone. */
  take(text: string): string {
    if (this.remaining === 0 && !this.afterCr) return text;
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
    return text.slice(i);
  }
}
