import { escapeHtml } from '../discrepancies/escapeHtml.js';

/** Markup that is already safe: produced by {@link html} or deliberately trusted (fixed strings of ours). */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/**
 * A tagged template that escapes every interpolated value with `escapeHtml` unless it is already
 * {@link SafeHtml} (arrays are joined, null/undefined/false render nothing). Partner and user data can
 * only reach a page through it; attribute values in the templates are always double-quoted.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

/** Our own constant markup (CSS, fixed fragments); never pass data through this. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}
