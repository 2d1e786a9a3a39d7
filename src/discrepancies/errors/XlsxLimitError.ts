/**
 * An export that Excel could not show whole: more rows than a sheet holds, or a cell longer than Excel's
 * 32,767 characters. Refused rather than cut: a truncated reference or summary is a silent loss. The
 * message names the discrepancy and the column, and the exports that keep everything (CSV, JSON).
 */
export class XlsxLimitError extends Error {
  override readonly name = 'XlsxLimitError';
}
