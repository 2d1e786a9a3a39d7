/**
 * Longest error text stored in `reconciliation_runs.error` or logged: a partner that answers with a
 * megabyte-long header line must not turn into a megabyte error on every run (the tail never helps).
 */
export const ERROR_TEXT_MAX = 2000;

/** `text` cut to `max` characters, with a note saying how much was cut; shorter texts unchanged. */
export function capText(text: string, max = ERROR_TEXT_MAX): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... [cut: ${text.length - max} more characters]`;
}
