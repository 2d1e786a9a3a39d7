import iconv from 'iconv-lite';
import { DateTime, Info } from 'luxon';
import { identifierText } from '../shared/identifierText.js';
import { resolveCsvSourceConfig } from './csvSourceConfig.js';
import { ReportFormatError } from './errors/ReportFormatError.js';
import {
  asCsvConfig,
  executedAtName,
  type FixedWidthField,
  type FixedWidthRecordLayout,
  type FixedWidthSourceConfig,
  fixedWidthSourceProblems,
} from './fixedWidthSourceConfig.js';
import { openReportFile } from './openReportFile.js';
import type { ReportItem } from './partnerRow.js';
import { readHeader } from './readHeader.js';
import { DOS_END_OF_FILE, lengthCause } from './recordLengthCause.js';
import { classifyRow } from './rowKind.js';
import { type RowContext, toItem } from './toItem.js';

/** One data record type, ready to read: its fields by name and the CSV row reading it (toItem). */
interface PreparedLayout {
  type: string;
  layout: FixedWidthRecordLayout;
  /** The virtual header: own fields, then inherited ones, then the joined execution time. */
  names: string[];
  own: FixedWidthField[];
  inherited: string[];
  context: RowContext | undefined;
  /** Indexes (in `names`) of fields with implied decimals that the layout reads, with their field. */
  decimals: { index: number; field: FixedWidthField }[];
}

/** Items per yielded batch: about what a 64 KiB chunk of 250-character records holds. */
const BATCH = 256;

/**
 * Streams a fixed-width report as parsed rows and rejections, in file order, the way readCsvReportBatches
 * streams a CSV one: the file (gzipped or not) is read a 64 KiB chunk at a time and split into lines, and each record is sliced
 * by position into its spec's named fields, which are then checked exactly like a CSV row's cells (toItem.ts:
 * the same rejections, amount conventions, row kinds and time parsing). Only the current chunk, one batch of
 * items and the latest record of each type (for `inherit`) are held: memory stays flat whatever the size.
 *
 * Structural problems throw ReportFormatError (see {@link FixedWidthSourceConfig}): the caller must apply
 * nothing of the file. The header's period is the first item, a `declaration` (the coverage the report
 * declares, used by a reconciler with `coverage: { fromReport: true }`); a trailer's count is checked when the file ends, after every detail has been yielded, which is why
 * the run stages in one transaction that the error rolls back.
 */
export async function* readFixedWidthReportBatches(
  file: string,
  config: FixedWidthSourceConfig,
  options: { timezone: string },
): AsyncGenerator<ReportItem[]> {
  const problems = fixedWidthSourceProblems(config);
  if (problems.length > 0) {
    throw new Error(`invalid fixed-width source config for ${config.path}: ${problems.join('; ')}`);
  }
  if (!Info.normalizeZone(options.timezone).isValid) {
    throw new Error(`unknown time zone ${JSON.stringify(options.timezone)} for reading ${file}`);
  }
  const layouts = new Map<string, PreparedLayout>();
  for (const [type, layout] of Object.entries(config.records)) {
    layouts.set(type, prepare(file, config, type, layout, options.timezone));
  }
  const reader = new RecordReader(file, config, layouts, options);
  // A gzipped file is decompressed as it is read (openReportFile), a chunk at a time like a plain one.
  const source = openReportFile(file);
  const encoding = config.encoding ?? 'latin1';
  // Latin-1 maps every byte to one character natively (see readCsvReport's decodedText).
  const decoder: { write(chunk: Buffer): string; end(): string | undefined } =
    encoding === 'latin1'
      ? { write: (chunk) => chunk.toString('latin1'), end: () => undefined }
      : iconv.getDecoder(encoding);
  const maxPending = config.recordLength * 4 + 2;
  let pending = '';
  try {
    for await (const chunk of source) {
      pending += decoder.write(chunk);
      const items: ReportItem[] = [];
      pending = reader.takeLines(pending, false, items);
      if (pending.length > maxPending) {
        throw new ReportFormatError(
          `${file}: line ${reader.line}: no line end within ${pending.length} characters; records are ${config.recordLength} long`,
          { file, line: reader.line },
        );
      }
      for (let i = 0; i < items.length; i += BATCH) yield items.slice(i, i + BATCH);
    }
    const items: ReportItem[] = [];
    reader.takeLines(pending + (decoder.end() ?? ''), true, items);
    reader.finish();
    for (let i = 0; i < items.length; i += BATCH) yield items.slice(i, i + BATCH);
  } finally {
    await source.close();
  }
}

/** Splits text into records and reads each; keeps the state a file's records are checked against. */
class RecordReader {
  /** Physical line of the next record. */
  line = 1;
  private headerSeen = false;
  private trailerLine: number | undefined;
  /** Records between the header and the trailer. */
  private records = 0;
  /** The latest record of each type, with its line (for `inherit`). */
  private readonly latest = new Map<string, { text: string; line: number }>();

  constructor(
    private readonly file: string,
    private readonly config: FixedWidthSourceConfig,
    private readonly layouts: Map<string, PreparedLayout>,
    private readonly options: { timezone: string },
  ) {}

  /** Reads every whole line of `text` into `items`; returns the unfinished rest (empty when `final`). */
  takeLines(text: string, final: boolean, items: ReportItem[]): string {
    let from = 0;
    for (;;) {
      let end = from;
      while (end < text.length && text.charCodeAt(end) !== 10 && text.charCodeAt(end) !== 13) end++;
      if (end === text.length) break;
      // A CR as the chunk's last character may be the first half of a CRLF in the next chunk.
      if (text.charCodeAt(end) === 13 && end + 1 === text.length && !final) break;
      this.record(text.slice(from, end), items);
      from = end + (text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    }
    const rest = text.slice(from);
    if (!final) return rest;
    if (rest.length > 0) this.record(rest, items);
    return '';
  }

  /** The end of the file: a trailer must have closed it (a cut file proves nothing, it fails). */
  finish(): void {
    const { file, config } = this;
    if (!this.headerSeen && config.header) {
      throw new ReportFormatError(`${file}: file is empty: no header record (type ${config.header.type})`, {
        file,
      });
    }
    if (config.trailer && this.trailerLine === undefined) {
      throw new ReportFormatError(
        `${file}: the file ends at line ${this.line - 1} without its trailer record (type ${config.trailer.type}): ` +
          'it was cut or is incomplete, and nothing of it is applied',
        { file, line: this.line - 1 },
      );
    }
  }

  private fail(message: string, field?: string): never {
    const line = this.line;
    throw new ReportFormatError(`${this.file}: line ${line}: ${message}`, {
      file: this.file,
      line,
      ...(field ? { field } : {}),
    });
  }

  private record(text: string, items: ReportItem[]): void {
    const { config } = this;
    try {
      if (this.trailerLine !== undefined) {
        // Blank lines after the trailer carry nothing, nor does a DOS end-of-file mark (Ctrl-Z) alone on its
        // line, which old transfer tools append; a record there is outside what the trailer counted.
        if (text.length === 0 || text === DOS_END_OF_FILE) return;
        this.fail(`a record after the trailer (line ${this.trailerLine}): the file is not one report`);
      }
      if (text.length !== config.recordLength) {
        this.fail(
          `record is ${text.length} characters long, the layout's records are ${config.recordLength} ` +
            `(${lengthCause(text, config.recordLength, config.encoding ?? 'latin1')}: its fields cannot be read by position)`,
        );
      }
      const type = slice(text, config.recordType);
      if (config.header && !this.headerSeen) {
        if (type !== config.header.type) {
          this.fail(
            `the first record must be the header (${config.recordType.name} ${JSON.stringify(config.header.type)}), found ${JSON.stringify(type)}`,
            config.recordType.name,
          );
        }
        this.header(text, items);
        this.headerSeen = true;
        return;
      }
      if (config.header && type === config.header.type)
        this.fail('a second header record', config.recordType.name);
      if (config.trailer && type === config.trailer.type) {
        this.trailer(text);
        this.trailerLine = this.line;
        return;
      }
      this.records++;
      this.latest.set(type, { text, line: this.line });
      const layout = this.layouts.get(type);
      if (layout === undefined) {
        // Not guessed, and not skipped: it may be an execution in a layout we do not know. Nothing in it says
        // whom it is about, so the run proves nothing absent.
        const known = [...this.layouts.keys()].join(', ');
        items.push({
          kind: 'rejected',
          rejected: {
            line: this.line,
            field: config.recordType.name,
            reason: `${JSON.stringify(type)} is not a known record type (known: ${known}); the record is not guessed at`,
          },
        });
        return;
      }
      items.push(this.detail(text, layout));
    } finally {
      this.line++;
    }
  }

  private header(text: string, items: ReportItem[]): void {
    const header = this.config.header!;
    const value = (name: string) => slice(text, header.fields.find((field) => field.name === name)!);
    for (const [name, accepted] of Object.entries(header.expect ?? {})) {
      const found = value(name);
      if (!accepted.includes(found)) {
        this.fail(
          `header field ${name} is ${JSON.stringify(found)}, this layout reads ${accepted.join(' or ')}`,
          name,
        );
      }
    }
    if (header.period) {
      const { from, to, dateFormat } = header.period;
      const day = (name: string) => {
        const text = value(name);
        const parsed = DateTime.fromFormat(text, dateFormat, { zone: this.options.timezone });
        if (!parsed.isValid)
          this.fail(`header field ${name} ${JSON.stringify(text)} is not a date in ${dateFormat}`, name);
        return parsed.startOf('day');
      };
      const first = day(from);
      const last = day(to);
      if (last < first) this.fail(`the header's period ends (${to}) before it starts (${from})`, to);
      // Whole days, the last one included: calendar days in the reconciler's zone (23 or 25 hours at a change).
      items.push({
        kind: 'declaration',
        coverage: { line: this.line, from: first.toJSDate(), to: last.plus({ days: 1 }).toJSDate() },
      });
    }
  }

  private trailer(text: string): void {
    const field = this.config.trailer!.count;
    const written = slice(text, field);
    if (!/^\d+$/.test(written))
      this.fail(`trailer field ${field.name} ${JSON.stringify(written)} is not a count`, field.name);
    const count = Number(written);
    if (count !== this.records) {
      this.fail(
        `the trailer counts ${count} records (${field.name}) but ${this.records} were read: ` +
          'records are missing or extra, and nothing of the file is applied',
        field.name,
      );
    }
  }

  private detail(text: string, prepared: PreparedLayout): ReportItem {
    const line = this.line;
    const cells: string[] = prepared.own.map((field) => slice(text, field));
    if (prepared.layout.inherit) {
      const parent = this.latest.get(prepared.layout.inherit.from);
      const parentLayout = this.layouts.get(prepared.layout.inherit.from)!;
      if (parent === undefined) {
        return {
          kind: 'rejected',
          rejected: {
            line,
            field: prepared.inherited[0]!,
            reason: `no record of type ${JSON.stringify(prepared.layout.inherit.from)} before it, which its ${prepared.inherited.join(', ')} come from`,
            identifiers: this.identifiers(cells, prepared),
          },
        };
      }
      const parentField = (name: string) => parentLayout.own.find((field) => field.name === name)!;
      // The latest parent is only this record's own when the record names it: a CV of another RO (a
      // cancellation RO's CV placed after a sales RO) would take that RO's kind of transaction.
      for (const [name, parentName] of Object.entries(prepared.layout.inherit.key ?? {})) {
        const own = cells[prepared.names.indexOf(name)]!;
        const theirs = slice(parent.text, parentField(parentName));
        if (own !== theirs) {
          return {
            kind: 'rejected',
            rejected: {
              line,
              field: name,
              reason:
                `${name} ${JSON.stringify(own.trim())} is not that of the record of type ${JSON.stringify(prepared.layout.inherit.from)} ` +
                `before it (line ${parent.line}, ${parentName} ${JSON.stringify(theirs.trim())}), which its ${prepared.inherited.join(', ')} would come from: ` +
                'which record it belongs to is not guessed',
              identifiers: this.identifiers(cells, prepared),
            },
          };
        }
      }
      for (const name of prepared.inherited) cells.push(slice(parent.text, parentField(name)));
    }
    if (prepared.layout.ignored) {
      return {
        kind: 'row',
        row: {
          line,
          reference: null,
          partnerReference: null,
          amount: null,
          currency: null,
          executedAt: null,
          kind: 'ignored',
        },
      };
    }
    const at = prepared.layout.executedAt;
    if (at) {
      const date = cells[prepared.names.indexOf(at.date)]!;
      cells.push(at.time === undefined ? date : `${date} ${cells[prepared.names.indexOf(at.time)]}`);
    }
    for (const { index, field } of prepared.decimals) {
      const digits = cells[index]!;
      const decimals = field.impliedDecimals!;
      if (digits.length !== field.length || !/^\d+$/.test(digits)) {
        // A fee or a batch row is not checked further, as in CSV reports; any other row is rejected here.
        const rule = prepared.context!.settings.kind;
        if (rule) {
          const kind = classifyRow(
            rule,
            prepared.context!.layout.kindIndexes.map((i) => cells[i]!.trim()),
          );
          if (kind.ok && kind.kind === 'ignored') continue;
        }
        return {
          kind: 'rejected',
          rejected: {
            line,
            field: field.name,
            reason: `${JSON.stringify(digits)} is not ${field.length} digits with ${decimals} implied decimals`,
            identifiers: this.identifiers(cells, prepared),
          },
        };
      }
      const whole = digits.slice(0, digits.length - decimals).replace(/^0+(?=\d)/, '');
      cells[index] =
        decimals === 0 ? whole || '0' : `${whole || '0'}.${digits.slice(digits.length - decimals)}`;
    }
    return toItem(
      cells.map((cell) => cell.trim()),
      line,
      prepared.context!,
    );
  }

  private identifiers(cells: string[], prepared: PreparedLayout) {
    const columns = prepared.layout.columns ?? {};
    const read = (name: string | undefined) => {
      const index = name === undefined ? -1 : prepared.names.indexOf(name);
      return index === -1 ? null : identifierText(cells[index]!);
    };
    return { reference: read(columns.reference), partnerReference: read(columns.partnerReference) };
  }
}

/** A field's characters, untrimmed (trimming is the row reader's: a code is compared as the spec writes it). */
function slice(text: string, field: { start: number; length: number }): string {
  return text.slice(field.start - 1, field.start - 1 + field.length);
}

function prepare(
  file: string,
  config: FixedWidthSourceConfig,
  type: string,
  layout: FixedWidthRecordLayout,
  timezone: string,
): PreparedLayout {
  const own = [...layout.fields];
  const inherited = [...(layout.inherit?.fields ?? [])];
  const names = [...own.map((field) => field.name), ...inherited];
  const joined = executedAtName(layout);
  if (joined !== undefined && layout.executedAt?.time !== undefined) names.push(joined);
  if (layout.ignored) return { type, layout, names, own, inherited, context: undefined, decimals: [] };
  const settings = resolveCsvSourceConfig(asCsvConfig(config, layout));
  const header = readHeader(names, '', settings, file, 0);
  const read = new Set([...header.columns.map((column) => column.index), ...header.amountIndexes]);
  const decimals = own
    .map((field, index) => ({ index, field }))
    .filter(({ index, field }) => field.impliedDecimals !== undefined && read.has(index));
  return {
    type,
    layout,
    names,
    own,
    inherited,
    context: { layout: header, settings, timezone },
    decimals,
  };
}
