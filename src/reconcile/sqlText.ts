/** SQL: a timestamptz expression as ISO 8601 UTC text with milliseconds, like `Date.toISOString()`. */
export function isoUtc(expression: string): string {
  return `to_char((${expression}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** SQL: `<amount> <currency>` for a sentence, e.g. `10.50 BRL`; `an unknown amount` when missing. */
export function money(amount: string, currency: string): string {
  return `COALESCE((${amount})::text || COALESCE(' ' || (${currency}), ''), 'an unknown amount')`;
}
