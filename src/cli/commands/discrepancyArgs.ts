import { type ParseArgsConfig, parseArgs } from 'node:util';
import { toMilliseconds } from '../../duration.js';
import { DiscrepancyKind, DiscrepancyStatus } from '../../status.js';
import { UsageError } from '../usageError.js';

/** `parseArgs` in strict mode; whatever it refuses becomes a {@link UsageError} (exit code 2). */
export function parseStrict<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    // strict is parseArgs' default too; forcing it keeps the inferred types (which assume strict) honest.
    return parseArgs({ ...config, strict: true }) as ReturnType<typeof parseArgs<T>>;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `--x a --x b,c` -> `['a', 'b', 'c']` (repeatable and comma-separated), blanks dropped. */
export function splitList(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
}

/** A list of allowed values (statuses, kinds), refusing unknown ones with the allowed list. */
export function enumList<T extends string>(
  flag: string,
  values: string[] | undefined,
  allowed: readonly T[],
): T[] {
  const list = splitList(values);
  const unknown = list.filter((value) => !(allowed as readonly string[]).includes(value));
  if (unknown.length)
    throw new UsageError(`--${flag}: unknown ${unknown.join(', ')} (one of ${allowed.join(', ')})`);
  return list as T[];
}

export const STATUSES = Object.values(DiscrepancyStatus);
export const KINDS = Object.values(DiscrepancyKind);

/** `--since`: an ISO 8601 date or instant (`2024-05-01`, `2024-05-01T12:00:00Z`) or an age (`7d`, `12h`, `30m`). */
export function parseSince(value: string, now = Date.now()): Date {
  if (/^\s*\d+\s*(ms|s|m|h|d)\s*$/.test(value)) return new Date(now - toMilliseconds(value, '--since'));
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) {
    const date = new Date(value.trim());
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new UsageError(
    `--since: "${value}" is neither an ISO 8601 date (2024-05-01) nor an age (7d, 12h, 30m)`,
  );
}

/** A whole positive number for `--limit`. */
export function parsePositiveInt(flag: string, value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(`--${flag} must be a whole number >= 1`);
  return Number(value);
}
