import { ReportFormatError } from './errors/ReportFormatError.js';
import { parseExecutedAt } from './parseExecutedAt.js';
import type { ReportedCoverage, ReportItem } from './partnerRow.js';
import type { RecordLayout } from './recordLayout.js';

/** What one record of a {@link RecordLayout} file is to the CSV reader. */
export type RecordAction =
  /** The column names of the data records that follow. */
  | { kind: 'header' }
  /** A row, to read with the last header's names. */
  | { kind: 'data' }
  /** Read past (preamble, totals, a count that agreed). */
  | { kind: 'skip' }
  /** A declaration or a rejection, as it is. */
  | { kind: 'item'; item: ReportItem };

/** Known types a rejection lists, so that its reason stays readable. */
const LISTED_TYPES = 10;

/**
 * Reads one file's records by type, in file order (see {@link RecordLayout}): tells the CSV reader which are
 * headers and rows, turns coverage records into declarations, checks counts as their records come and, at
 * the end, that the file was complete. A file that breaks the layout's structure (a row before any header,
 * a count that disagrees, a missing end) throws ReportFormatError naming the file, line and record: its
 * run applies nothing. An unknown record type is one rejected row.
 */
export class RecordTypeReader {
  private readonly typeColumn: number;
  private readonly data: Set<string>;
  private readonly ignore: Set<string>;
  private readonly counts: Map<string, { position: number; since?: string }>;
  /** Types that start a count: the data records read when each was last seen. */
  private readonly marks = new Map<string, number>();
  private dataRecords = 0;
  private headerSeen = false;
  private endLine: number | undefined;
  /** Line of the last record read, where a missing end is reported. */
  private lastLine = 0;
  /**
   * Declarations not yet proven to speak for a whole section or file, held back until they are. A section
   * header alone promises nothing: a day split over several files (PayPal numbers them) repeats its SH in
   * the first file, whose last section has no SC; a file cut after an SH has none either.
   */
  private pending: ReportedCoverage[] = [];
  /** The count record that closes a coverage record's section (`since` the coverage record), if any. */
  private readonly sectionCount: string | undefined;

  constructor(
    private readonly layout: RecordLayout,
    private readonly file: string,
    private readonly dates: { dateFormat: string | undefined; timezone: string },
  ) {
    this.typeColumn = layout.typeColumn ?? 0;
    this.data = new Set(layout.data);
    this.ignore = new Set(layout.ignore ?? []);
    this.counts = new Map((layout.counts ?? []).map((count) => [count.record, count]));
    for (const count of layout.counts ?? []) if (count.since !== undefined) this.marks.set(count.since, 0);
    this.sectionCount = layout.coverage
      ? layout.counts?.find((count) => count.since === layout.coverage?.record)?.record
      : undefined;
  }

  /** Whether the record is of a data type (a row), without taking it. `cells` may be untrimmed. */
  isData(cells: readonly string[]): boolean {
    return this.data.has((cells[this.typeColumn] ?? '').trim());
  }

  /** What the record is; throws ReportFormatError when it breaks the layout. `cells` may be untrimmed. */
  take(cells: readonly string[], line: number): RecordAction {
    const type = (cells[this.typeColumn] ?? '').trim();
    this.lastLine = line;
    if (this.endLine !== undefined) {
      throw this.error(
        line,
        `a ${JSON.stringify(type)} record after the ${this.layout.end} record that ends the file (line ${this.endLine})`,
      );
    }
    if (this.marks.has(type)) this.marks.set(type, this.dataRecords);
    if (type === this.layout.header) {
      this.headerSeen = true;
      return { kind: 'header' };
    }
    if (this.data.has(type)) {
      if (!this.headerSeen) {
        throw this.error(
          line,
          `a ${type} record before any ${this.layout.header} record: its columns have no names`,
        );
      }
      this.dataRecords += 1;
      return { kind: 'data' };
    }
    let known = this.ignore.has(type);
    const count = this.counts.get(type);
    if (count) {
      this.checkCount(cells, line, type, count);
      known = true;
    }
    if (this.layout.coverage && type === this.layout.coverage.record) {
      const opened = this.declaration(cells, line, this.layout.coverage);
      // A new section while the last one is still open: that one was never closed by its count.
      const left = this.sectionCount === undefined ? undefined : this.pending.pop();
      this.pending.push(opened);
      if (left) return { kind: 'item', item: this.unclosed(left) };
      return { kind: 'skip' };
    }
    if (type === this.sectionCount && this.pending.length > 0) {
      // The section's count agreed (checkCount above): its declaration speaks for the whole section.
      const closed = this.pending.pop() as ReportedCoverage;
      return { kind: 'item', item: { kind: 'declaration', coverage: closed } };
    }
    if (type === this.layout.end) {
      this.endLine = line;
      return { kind: 'skip' };
    }
    if (known) return { kind: 'skip' };
    return {
      kind: 'item',
      item: {
        kind: 'rejected',
        rejected: {
          line,
          field: `record type (position ${this.typeColumn})`,
          reason: `${JSON.stringify(type.slice(0, 40))} is not a record type of this report (known: ${this.knownTypes()}); the record is not guessed`,
        },
      },
    };
  }

  /**
   * At the end of the file: throws when the layout has an end record and the file never reached it. Returns
   * the declarations still held back: with a section count, each is a section that was never closed; without
   * one, they speak for the file when its end record (and any whole-file count on it) was read, and for
   * nothing otherwise.
   */
  finish(): ReportItem[] {
    if (this.layout.end !== undefined && this.endLine === undefined) {
      throw this.error(
        this.lastLine,
        `the file ends without its ${this.layout.end} record: it was cut short or is partial, and nothing of it is applied`,
      );
    }
    const left = this.pending;
    this.pending = [];
    if (this.sectionCount === undefined && this.endLine !== undefined)
      return left.map((coverage) => ({ kind: 'declaration', coverage }));
    return left.map((coverage) => this.unclosed(coverage));
  }

  /** A held-back declaration whose section or file was not proven whole: it promises nothing. */
  private unclosed(coverage: ReportedCoverage): ReportItem {
    const record = this.layout.coverage?.record ?? 'coverage';
    const closer = this.sectionCount ?? this.layout.end;
    const reason =
      closer === undefined
        ? `the ${record} record on line ${coverage.line} declares a period, but the layout has no record that proves the file whole`
        : `the ${record} section from line ${coverage.line} is not closed by its ${closer} record (a report split over several files, or a file cut short)`;
    return { kind: 'declaration', coverage: { ...coverage, unclosed: reason } };
  }

  private checkCount(
    cells: readonly string[],
    line: number,
    type: string,
    count: { position: number; since?: string },
  ): void {
    const text = (cells[count.position] ?? '').trim();
    const field = `${type} position ${count.position}`;
    if (!/^\d{1,15}$/.test(text)) {
      throw this.error(
        line,
        `the ${type} record's count ${JSON.stringify(text.slice(0, 40))} is not a whole number`,
        field,
      );
    }
    const read = this.dataRecords - (count.since === undefined ? 0 : (this.marks.get(count.since) ?? 0));
    const declared = Number(text);
    if (declared !== read) {
      const scope = count.since === undefined ? 'the file' : `its ${count.since} section`;
      const what = [...this.data].join('/');
      throw this.error(
        line,
        `the ${type} record counts ${declared} ${what} record(s) in ${scope}, but ${read} were read: rows are missing or extra, and nothing of the file is applied`,
        field,
      );
    }
  }

  private declaration(
    cells: readonly string[],
    line: number,
    coverage: NonNullable<RecordLayout['coverage']>,
  ): ReportedCoverage {
    const dateFormat = coverage.dateFormat ?? this.dates.dateFormat;
    const read = (position: number, end: string): Date => {
      const text = (cells[position] ?? '').trim();
      const parsed = parseExecutedAt(text, { dateFormat, timezone: this.dates.timezone });
      if (!parsed.ok) {
        throw this.error(
          line,
          `the ${coverage.record} record's ${end} ${JSON.stringify(text.slice(0, 40))} is not a valid date-time: ${parsed.reason}`,
          `${coverage.record} position ${position}`,
        );
      }
      return parsed.value;
    };
    const from = read(coverage.from, 'start');
    const to = read(coverage.to, 'end');
    if (from > to) {
      throw this.error(line, `the ${coverage.record} record's period ends before it starts`, coverage.record);
    }
    return { line, from, to };
  }

  private knownTypes(): string {
    const { layout } = this;
    const types = [
      layout.header,
      ...layout.data,
      ...(layout.ignore ?? []),
      ...(layout.coverage ? [layout.coverage.record] : []),
      ...this.counts.keys(),
      ...(layout.end !== undefined && !this.counts.has(layout.end) ? [layout.end] : []),
    ];
    const more = types.length > LISTED_TYPES ? ` and ${types.length - LISTED_TYPES} more` : '';
    return `${types.slice(0, LISTED_TYPES).join(', ')}${more}`;
  }

  private error(line: number, message: string, field?: string): ReportFormatError {
    return new ReportFormatError(`${this.file}: line ${line}: ${message}`, {
      file: this.file,
      line,
      ...(field === undefined ? {} : { field }),
    });
  }
}
