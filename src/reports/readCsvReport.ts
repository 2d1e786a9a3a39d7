import { pipeline, Readable } from 'node:stream';
import { CsvError, type Options, parse } from 'csv-parse';
import iconv from 'iconv-lite';
import { Info } from 'luxon';
import { identifierText } from '../shared/identifierText.js';
import { countLineBreaks } from './countLineBreaks.js';
import { CsvAccountCheck } from './csvAccountCheck.js';
import {
  type CsvSourceConfig,
  type ResolvedCsvSourceConfig,
  resolveCsvSourceConfig,
} from './csvSourceConfig.js';
import { ReportFormatError } from './errors/ReportFormatError.js';
import { FastSplitter } from './fastSplitter.js';
import { LineSkipper } from './lineSkipper.js';
import { openReportFile } from './openReportFile.js';
import type { ReportItem } from './partnerRow.js';
import { type HeaderLayout, readHeader } from './readHeader.js';
import { RecordTypeReader } from './recordTypeReader.js';
import { type RowContext, toItem } from './toItem.js';

/**
 * csv-parse stops on a record larger than this (in bytes). Such a record means a wrong delimiter or an
 * unclosed quote swallowing the rest of the file; the cap keeps memory bounded while it happens.
 */
export const MAX_RECORD_BYTES = 8 * 1024 * 1024;
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

/** What reading one file has found so far, shared by the fast splitter and csv-parse. */
interface ReadState {
  file: string;
  settings: ResolvedCsvSourceConfig;
  timezone: string;
  layout: HeaderLayout | undefined;
  context: RowContext | undefined;
  /** Physical line where the next record starts. */
  nextLine: number;
  /** The record types, when the source has several (see RecordLayout). */
  records: RecordTypeReader | undefined;
  /** The merchant account check (CsvSourceConfig.account), when the accounts are known. */
  account: CsvAccountCheck | undefined;
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
  options: ReadOptions,
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
 * whichever the file's first line used. The fast path splits records about ten times faster than
 * csv-parse, and the per-row checks after it were rewritten to match (see parseDecimal and
 * parseExecutedAt), which made reading a large report an order of magnitude faster, with less memory
 * (docs/PERFORMANCE.md, "Reading a report").
 */
export async function* readCsvReportBatches(
  file: string,
  config: CsvSourceConfig,
  options: ReadOptions,
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
    records: settings.records
      ? new RecordTypeReader(settings.records, file, {
          dateFormat: settings.dateFormat,
          timezone: options.timezone,
        })
      : undefined,
    account:
      settings.account && options.accounts
        ? new CsvAccountCheck(settings.account, options.accounts, file, settings.records?.typeColumn ?? 0)
        : undefined,
  };

  // A gzipped report is decompressed as it is read (openReportFile).
  const source = openReportFile(file);
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
        // Only the last record of the file can come without its line end (FastSplitter.last).
        addRecord(state, cells, raw, line, items, true, breaks > 0);
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
    await source.close();
  }

  if (state.layout === undefined && settings.records && source.bytesRead > 0) {
    throw new ReportFormatError(
      `${file}: no ${settings.records.header} record (the names of the data columns) in the file`,
      { file },
    );
  }
  if (state.layout === undefined) {
    const detail =
      settings.skipLines > 0 && source.bytesRead > 0
        ? ` after skipping ${settings.skipLines} line(s): no header on line ${settings.skipLines + 1}`
        : '';
    throw new ReportFormatError(`${file}: file is empty${detail}`, { file });
  }
  const heldBack = state.records?.finish();
  if (heldBack?.length) yield heldBack;
}

interface ReadOptions {
  timezone: string;
  /**
   * The merchant accounts the report must state, where the source's `account` says it states one; without
   * them (or without `account`) nothing is checked (the run warns: src/reconcile/runOnce.ts).
   */
  accounts?: readonly string[];
}

/** The file's text, decoded and without the skipped lines, a chunk at a time. */
async function* decodedText(source: AsyncIterable<Buffer>, settings: ResolvedCsvSourceConfig) {
  // The same decoder as iconv.decodeStream (a UTF-8 byte order mark is removed, invalid bytes become
  // U+FFFD), without a stream per stage. Latin-1 maps every byte to the code point of the same value,
  // which Node does natively; iconv-lite does it with a table in JS, a visible part of reading a large
  // file (docs/PERFORMANCE.md, "Reading a report").
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

/**
 * One record, however it was split: the header, a blank line to skip, or a row to check. `terminated`: a line
 * end follows it (false only for the file's last record, see {@link unterminatedRecord}).
 */
function addRecord(
  state: ReadState,
  cells: string[],
  raw: string,
  line: number,
  items: ReportItem[],
  fast: boolean,
  terminated: boolean,
): void {
  // One empty cell: nothing written on the line (spaces too, on the fast path, as csv-parse trims them).
  const blank = cells.length === 1 && (fast ? cells[0]!.trim() : cells[0]) === '';
  if (!terminated && state.settings.finalLineBreak && state.layout !== undefined) {
    if (blank && raw === '') return;
    items.push(unterminatedRecord(state, cells, line, line + countLineBreaks(raw)));
    return;
  }
  if (state.records) {
    // Blank lines separate nothing in a typed layout either; anything else has a type to check.
    if (blank && /^[\r\n]*$/.test(raw)) return;
    state.account?.record(cells, line);
    const action = state.records.take(cells, line);
    if (action.kind === 'skip') return;
    if (action.kind === 'item') {
      items.push(action.item);
      return;
    }
    // A header record replaces the names before it (one per section); a data record is read below.
    if (action.kind === 'header') state.layout = undefined;
  }
  if (state.layout === undefined) {
    if (fast) for (let i = 0; i < cells.length; i++) cells[i] = cells[i]!.trim();
    state.layout = readHeader(cells, raw, state.settings, state.file, line);
    state.context = { layout: state.layout, settings: state.settings, timezone: state.timezone };
    state.account?.header(cells, line);
    return;
  }
  // A line with no characters at all carries no data: exporters end files or separate sections with
  // blank lines, and skipping them loses nothing. Anything else (spaces, `""`, delimiters between
  // empty cells) is something the partner wrote, so it goes through the checks and is rejected if
  // it is not a valid row; it is never silently dropped.
  if (blank && /^[\r\n]*$/.test(raw)) return;
  if (fast) {
    // Fast-path cells are unquoted, and csv-parse trims unquoted values: only the mapped ones are read.
    for (const column of state.layout.columns) {
      const value = cells[column.index];
      if (value !== undefined) cells[column.index] = value.trim();
    }
  }
  state.account?.row(cells, line);
  items.push(toItem(cells, line, state.context!));
}

/**
 * The file's last record when no line break follows it, on a source whose complete files end with one: a
 * transfer still in progress (SFTP, a download) or cut short stops anywhere, and a record cut inside its last
 * field still has every field (Stripe's `payment_metadata[order_id]` comes last: `order-2999` reads as
 * `order-29`, another intent; a cut amount is another amount). So it is never read as a row. Rejected, with
 * the identifiers it shows when it has the header's width (they keep those intents stuck; a cut value names
 * nobody for sure), and marked, so that the run proves nothing absent: the rows after it may be missing.
 * Before the header (a file of only a header, or a preamble) it is read as usual: no row can come of it. In a
 * typed layout it never reaches the record-type checks: a file cut in its end record fails for the missing
 * end record, and a record of another type than data names nobody.
 */
function unterminatedRecord(state: ReadState, cells: string[], line: number, lastLine: number): ReportItem {
  const layout = state.layout!;
  const cell = (index: number | undefined) => (index === undefined ? null : identifierText(cells[index]!));
  const { reference, partnerReference } = layout.byField;
  const isRow = (state.records === undefined || state.records.isData(cells)) && cells.length === layout.width;
  const reason = `the file ends without a line break after line ${lastLine}: it may be cut short, so this record is not read and the run proves no intent absent`;
  const rejected = { line, field: '*', reason, unterminated: true } as const;
  return {
    kind: 'rejected',
    rejected: isRow
      ? {
          ...rejected,
          identifiers: { reference: cell(reference?.index), partnerReference: cell(partnerReference?.index) },
        }
      : rejected,
  };
}

/** A record's raw text that ends with a line end (csv-parse keeps it in `raw`). */
const LINE_END_LAST = /[\r\n]$/;

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
    // csv-parse builds a CsvError (message, stack) for every record whose width differs from the FIRST
    // record's, even with relax_column_count, and drops it. In a typed layout (PayPal: a 6-field RH, then
    // 22-field SB rows) that was every row, and a large share of reading time (docs/PERFORMANCE.md, "Reading
    // a report"). Expecting each record's width for the next keeps the errors to the few places where the
    // type changes; widths are checked by toItem anyway.
    // `state` is csv-parse's public (documented as backward-compatible) view of its parser state.
    if (parserState) parserState.expectedRecordLength = record.length;
    return { cells: record, raw, line };
  };
  let parserState: { expectedRecordLength?: number } | undefined;
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
  parserState = (parser as unknown as { state?: { expectedRecordLength?: number } }).state;
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
      // csv-parse's raw text of a record ends with its line end, unless it is the file's last one without.
      addRecord(state, cells, raw, line, items, false, LINE_END_LAST.test(raw));
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
