import { toMilliseconds } from './duration.js';

/**
 * "Since when": the one parser behind the CLI's `--since` and the review site's `?since=`, so both accept
 * and refuse the same text with the same words.
 *
 * Accepted: an age (`7d`, `12h`, `30m`, `45s`, `500ms`) counted back from `now`; a calendar date
 * (`2026-11-28`, midnight UTC); an instant with its zone (`2026-11-28T12:00Z`, `2026-11-28T12:00:00.5-03:00`).
 * Refused: dates that do not exist (`2026-02-31`, which `Date` would read as 3 March) and times without a
 * zone (which would be read in the zone of whichever process parses them).
 */
export function parseSince(text: string, now: number = Date.now()): Date | SinceError {
  const value = text.trim();
  if (/^\d+\s*(ms|s|m|h|d)$/.test(value)) return new Date(now - toMilliseconds(value, 'since'));
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (date) return calendarDate(value, date) ?? new SinceError(value, 'there is no such date');
  const instant =
    /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/i.exec(value);
  if (instant) {
    if (!instant[7]) return new SinceError(value, 'a time needs its zone (Z or an offset such as -03:00)');
    const [hour, minute, second] = [Number(instant[4]), Number(instant[5]), Number(instant[6] ?? 0)];
    const offset = instant[7].toUpperCase() === 'Z' ? [0, 0] : instant[7].slice(1).split(':').map(Number);
    if (
      !calendarDate(value, instant) ||
      hour > 23 ||
      minute > 59 ||
      second > 59 ||
      offset[0] > 23 ||
      offset[1] > 59
    )
      return new SinceError(value, 'there is no such date or time');
    return new Date(value);
  }
  return new SinceError(value, 'not a date, an instant or an age');
}

/** Why a `since` text was refused; `message` is what the CLI and the site show. */
export class SinceError {
  readonly message: string;
  constructor(
    readonly text: string,
    readonly reason: string,
  ) {
    this.message =
      `since: "${text.length > 40 ? `${text.slice(0, 40)}…` : text}" ${reason}; ` +
      'use a date (2026-11-28), an instant with its zone (2026-11-28T12:00:00Z) or an age (7d, 12h, 30m)';
  }
}

function calendarDate(text: string, [, year, month, day]: RegExpExecArray): Date | undefined {
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  // Date.UTC rolls 31 February over into March: a date that does not come back unchanged does not exist.
  const same = date.toISOString().slice(0, 10) === text.slice(0, 10);
  return same && Number(year) >= 1 ? date : undefined;
}
