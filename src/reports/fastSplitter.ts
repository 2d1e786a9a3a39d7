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
export class FastSplitter {
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
