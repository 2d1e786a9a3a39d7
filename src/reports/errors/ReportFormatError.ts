/**
 * A report file that cannot be read as a whole: no header, a mapped column missing, broken quoting.
 * Unlike a rejected row, nothing after this point can be trusted, so the reader stops and the run
 * must not apply anything from the file.
 */
export class ReportFormatError extends Error {
  override readonly name = 'ReportFormatError';
  /** The report file as it was given to the reader. */
  readonly file: string;
  /** Physical line (1-based, counting skipped lines and the header) where the problem was found. */
  readonly line?: number;
  /** The report's own column name(s) involved, when the problem is about columns. */
  readonly field?: string;

  /** `message` is expected to name the file already, so it reads well on its own in a log line. */
  constructor(message: string, details: { file: string; line?: number; field?: string }) {
    super(message);
    this.file = details.file;
    if (details.line !== undefined) this.line = details.line;
    if (details.field !== undefined) this.field = details.field;
  }
}
