import { ReportFormatError } from './errors/ReportFormatError.js';
import { parseExecutedAt } from './parseExecutedAt.js';
import type { ReportItem } from './partnerRow.js';
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
      return { kind: 'item', item: this.declaration(cells, line, this.layout.coverage) };
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

  /** At the end of the file: throws when the layout has an end record and the file never reached it. */
  finish(): void {
    if (this.layout.end !== undefined && this.endLine === undefined) {
      throw this.error(
        this.lastLine,
        `the file ends without its ${this.layout.end} record: it was cut short or is partial, and nothing of it is applied`,
      );
    }
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
  ): ReportItem {
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
    return { kind: 'declaration', coverage: { line, from, to } };
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
