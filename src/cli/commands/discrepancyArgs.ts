import { type ParseArgsConfig, parseArgs } from 'node:util';
import { parseSince as parseSinceText, SinceError } from '../../shared/since.js';
import { UsageError } from '../errors/UsageError.js';

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

/** `--since`: see {@link parseSinceText}; what it refuses is a usage error (exit 2). */
export function parseSince(value: string, now = Date.now()): Date {
  const since = parseSinceText(value, now);
  if (since instanceof SinceError) throw new UsageError(`--${since.message}`);
  return since;
}

/** A whole positive number for `--limit`. */
export function parsePositiveInt(flag: string, value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(`--${flag} must be a whole number >= 1`);
  return Number(value);
}
