const MAX_BIGINT = 9223372036854775807n;

/**
 * Whether `id` can name a discrepancy (`discrepancies.id` is a positive bigint). Anything else (`'abc'`,
 * `'1e3'`, a number too large) names no discrepancy: callers treat it as not found instead of letting
 * PostgreSQL fail the whole statement on a bad cast.
 */
export function isDiscrepancyId(id: string): boolean {
  return typeof id === 'string' && /^[0-9]{1,19}$/.test(id) && BigInt(id) > 0n && BigInt(id) <= MAX_BIGINT;
}

/** Ids as PostgreSQL prints them (no leading zeros), deduplicated and in ascending numeric order. */
export function normaliseIds(ids: readonly string[]): { valid: string[]; invalid: string[] } {
  const valid = new Set<bigint>();
  const invalid = new Set<string>();
  for (const id of ids) {
    if (isDiscrepancyId(id)) valid.add(BigInt(id));
    else invalid.add(String(id));
  }
  return {
    valid: [...valid].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String),
    invalid: [...invalid],
  };
}
