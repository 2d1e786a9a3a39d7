/**
 * Drops the first `count` physical lines of decoded text, whatever they contain: report titles and
 * periods are free text, and letting csv-parse read them (its `from_line`) would fail on a stray
 * quote in a title.
 */
export class LineSkipper {
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
