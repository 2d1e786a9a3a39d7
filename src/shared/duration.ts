/** A length of time as configured by people: `'500ms'`, `'30s'`, `'15m'`, `'2h'`, `'3d'`, or milliseconds. */
export type Duration = string | number;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Converts a {@link Duration} to whole milliseconds; throws a message naming `what` on bad input. */
export function toMilliseconds(duration: Duration, what: string): number {
  if (typeof duration === 'number') {
    if (Number.isInteger(duration) && duration >= 0) return duration;
    throw new RangeError(`${what}: ${duration} is not a whole, non-negative number of milliseconds`);
  }
  const match = /^\s*(\d+)\s*(ms|s|m|h|d)\s*$/.exec(duration);
  if (!match)
    throw new RangeError(`${what}: "${duration}" is not a duration; use forms like 500ms, 30s, 15m, 2h, 3d`);
  return Number(match[1]) * UNIT_MS[match[2]];
}
