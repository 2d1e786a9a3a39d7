import {
  DateTime,
  FixedOffsetZone,
  Info,
  type TokenParser,
  Zone,
  type ZoneOffsetFormat,
  type ZoneOffsetOptions,
} from 'luxon';

export interface ExecutedAtFormat {
  /**
   * Luxon format tokens, e.g. `'dd/MM/yyyy HH:mm:ss'`. A format with an offset or zone token (`ZZ`, `z`)
   * uses the offset written in the text.
   * @default undefined (ISO 8601)
   */
  dateFormat?: string;
  /** IANA zone (e.g. `'America/Sao_Paulo'`) for times written without an offset. */
  timezone: string;
}

export type ExecutedAtParseResult = { ok: true; value: Date } | { ok: false; reason: string };

// Token parsers are built once per format: building one costs more than parsing a date with it. Fixed
// locale, because the parser must be used with the locale it was built for and a process-wide
// Settings.defaultLocale change must not break (or silently change) report parsing.
const LOCALE = 'en-US';
const parsers = new Map<string, TokenParser>();
const zones = new Map<string, Zone>();

/**
 * Reads the instant a partner says it executed something, the same way whenever it runs. Local times are
 * read in `timezone`; an offset written in the text (`Z`, `+01:00`, a `ZZ` token) is honoured, and so is
 * a zone name (`z` token). A local time that does not exist there (skipped by a daylight saving change)
 * is refused instead of being moved by an hour the way luxon would. A local time that happens twice (the
 * repeated hour of a backward change) is read as its later occurrence, the one after the clocks went back:
 * standard time (`26/10/2025 01:30:00` in Europe/London is 01:30 GMT, 01:30Z). Luxon alone would take the
 * occurrence whose offset is in force on the day of the run (or when the process first parsed a date), so
 * a file read in July and again in December would give two instants an hour apart.
 */
export function parseExecutedAt(text: string, format: ExecutedAtFormat): ExecutedAtParseResult {
  const zone = zoneFor(format.timezone);
  if (!zone.isValid) return { ok: false, reason: `unknown time zone ${JSON.stringify(format.timezone)}` };

  if (format.dateFormat !== undefined) {
    const fixed = fixedWidthFormatFor(format.dateFormat);
    if (fixed !== null) {
      const instant = readFixedWidth(text, fixed, zone);
      if (instant !== undefined) return { ok: true, value: new Date(instant) };
    }
  }

  const parsed = parseIn(text, format.dateFormat, zone);
  if (!parsed.isValid) {
    return { ok: false, reason: explain(parsed.invalidReason, parsed.invalidExplanation, format.dateFormat) };
  }
  // An offset written in the text (or a fixed configured zone) names one instant: luxon's is exact.
  if (parsed.zone.isUniversal) return { ok: true, value: parsed.toJSDate() };

  // Luxon's instant in a zone with offset changes depends on the clock (see above) and it moves a
  // nonexistent local time forward instead of failing, so luxon only checks the text and the instant is
  // decided here. Reading the same text on a fixed UTC offset, which has no gaps, gives the wall clock
  // as written, unless the text names a zone of its own.
  const written = parseIn(text, format.dateFormat, FixedOffsetZone.utcInstance);
  if (written.isValid && written.zone.isUniversal) {
    const instant = localToInstant(written.toMillis(), parsed.zone);
    if (instant === undefined) {
      return {
        ok: false,
        reason: `local time ${written.toFormat('yyyy-MM-dd HH:mm:ss')} does not exist in ${parsed.zoneName} (daylight saving gap)`,
      };
    }
    return { ok: true, value: new Date(instant) };
  }
  // A zone name in the text: luxon read it in that zone, and its wall clock is the written one except in a
  // gap, which luxon has already moved past and cannot be told apart here (both readings move alike).
  const wallClock = parsed.toMillis() + parsed.offset * 60_000;
  return { ok: true, value: new Date(localToInstant(wallClock, parsed.zone) ?? parsed.toMillis()) };
}

/** A format of fixed-width numeric tokens and literals (see {@link readFixedWidth}), compiled once. */
interface FixedWidthFormat {
  length: number;
  literals: { at: number; text: string }[];
  /** Where each field's digits start, -1 when the format does not have it. */
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

type FixedWidthField = 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second' | 'millisecond';

const FIXED_TOKENS: Record<string, { field: FixedWidthField; width: number }> = {
  yyyy: { field: 'year', width: 4 },
  MM: { field: 'month', width: 2 },
  dd: { field: 'day', width: 2 },
  HH: { field: 'hour', width: 2 },
  mm: { field: 'minute', width: 2 },
  ss: { field: 'second', width: 2 },
  SSS: { field: 'millisecond', width: 3 },
};

const fixedWidthFormats = new Map<string, FixedWidthFormat | null>();

function fixedWidthFormatFor(dateFormat: string): FixedWidthFormat | null {
  let fixed = fixedWidthFormats.get(dateFormat);
  if (fixed === undefined) {
    fixed = compileFixedWidth(dateFormat);
    fixedWidthFormats.set(dateFormat, fixed);
  }
  return fixed;
}

/** Splits the format the way luxon does (runs of one character); null when a run is not supported. */
function compileFixedWidth(dateFormat: string): FixedWidthFormat | null {
  const fixed: FixedWidthFormat = {
    length: 0,
    literals: [],
    year: -1,
    month: -1,
    day: -1,
    hour: -1,
    minute: -1,
    second: -1,
    millisecond: -1,
  };
  for (let i = 0; i < dateFormat.length; ) {
    let end = i + 1;
    while (end < dateFormat.length && dateFormat[end] === dateFormat[i]) end++;
    const run = dateFormat.slice(i, end);
    i = end;
    if (/^[A-Za-z]/.test(run)) {
      const token = Object.hasOwn(FIXED_TOKENS, run) ? FIXED_TOKENS[run] : undefined;
      if (token === undefined || fixed[token.field] !== -1) return null;
      fixed[token.field] = fixed.length;
      fixed.length += token.width;
    } else if (/^[^0-9'\p{L}]$/u.test(run[0]) && !/[\uD800-\uDFFF]/.test(run)) {
      // Punctuation and spaces are matched literally by luxon too; quotes, digits and letters of other
      // scripts are left to luxon.
      fixed.literals.push({ at: fixed.length, text: run });
      fixed.length += run.length;
    } else {
      return null;
    }
  }
  return fixed.year === -1 || fixed.month === -1 || fixed.day === -1 ? null : fixed;
}

/**
 * The fast path of {@link parseExecutedAt}, for formats made only of fixed-width numeric tokens (`yyyy MM
 * dd HH mm ss SSS`, the first three required) and literal punctuation or spaces, like `dd/MM/yyyy
 * HH:mm:ss`: the instant `text` names in `zone` (epoch ms), or undefined when luxon must decide.
 *
 * Luxon's token parser is slow per date, and the gap check parses a second time: on a report of a million
 * rows that was most of the reading (docs/PERFORMANCE.md, "Reading a report"). Here the digits are read
 * with charCodeAt, Date.UTC gives the wall clock, and {@link localToInstant} makes it an instant with the
 * offsets of the same cached zone, as the luxon path does, at a small fraction of the cost.
 *
 * It answers only when it is sure: text of another length, a non-digit where a digit belongs, a value out
 * of range (day 31 in February; hour 24), a year below 100 (which Date.UTC reads as 19xx), or a local time
 * that does not exist (a daylight saving gap) all return undefined, and luxon then reads the text: it
 * refuses what does not exist and explains it in the usual words, except hour 24 at exactly 24:00:00,
 * which it reads (as ISO 8601 allows) as the next day's midnight: `240000` is accepted, `240001` refused.
 */
function readFixedWidth(text: string, fixed: FixedWidthFormat, zone: Zone): number | undefined {
  if (text.length !== fixed.length) return undefined;
  for (const literal of fixed.literals) {
    if (!text.startsWith(literal.text, literal.at)) return undefined;
  }
  const year = digitsAt(text, fixed.year, 4);
  const month = digitsAt(text, fixed.month, 2);
  const day = digitsAt(text, fixed.day, 2);
  const hour = fixed.hour === -1 ? 0 : digitsAt(text, fixed.hour, 2);
  const minute = fixed.minute === -1 ? 0 : digitsAt(text, fixed.minute, 2);
  const second = fixed.second === -1 ? 0 : digitsAt(text, fixed.second, 2);
  const millisecond = fixed.millisecond === -1 ? 0 : digitsAt(text, fixed.millisecond, 3);
  if (
    year < 100 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59 ||
    millisecond < 0
  ) {
    return undefined;
  }
  // A gap is left to luxon too, which explains it in the usual words.
  return localToInstant(Date.UTC(year, month - 1, day, hour, minute, second, millisecond), zone);
}

/** The number written in `width` ASCII digits at `at`, or -1. */
function digitsAt(text: string, at: number, width: number): number {
  let value = 0;
  for (let i = at; i < at + width; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Offset changes are months apart: a day either side of a wall clock holds at most one of them. */
const DAY_MS = 86_400_000;

/**
 * Local wall-clock time (as epoch ms of the same wall clock in UTC) to the instant it names in `zone`, or
 * undefined when that wall clock never happened there (a gap). Only the time itself is used, never the
 * clock of the machine: the offsets a day before and a day after are the only two it can have; each that
 * maps back onto itself is an occurrence, and of two (the repeated hour of a backward change) the later
 * one wins, the one after the clocks went back (standard time). The arithmetic is luxon's (`fixOffset`),
 * so fractional offsets such as Sao Paulo's -03:06:28 before 1914 give luxon's instants.
 */
function localToInstant(local: number, zone: Zone): number | undefined {
  const before = zone.offset(local - DAY_MS);
  const after = zone.offset(local + DAY_MS);
  // No change within a day either side (nearly every time): the one offset is the answer, no check needed.
  if (before === after) return local - before * 60 * 1000;
  let found: number | undefined;
  for (const offset of [before, after]) {
    const instant = local - offset * 60 * 1000;
    if (zone.offset(instant) === offset && (found === undefined || instant > found)) found = instant;
  }
  return found;
}

function parseIn(text: string, dateFormat: string | undefined, zone: Zone): DateTime {
  const options = { zone, setZone: true, locale: LOCALE };
  if (dateFormat === undefined) return DateTime.fromISO(text, options);
  return DateTime.fromFormatParser(text, parserFor(dateFormat), options);
}

function parserFor(dateFormat: string): TokenParser {
  let parser = parsers.get(dateFormat);
  if (parser === undefined) {
    parser = DateTime.buildFormatParser(dateFormat, { locale: LOCALE });
    parsers.set(dateFormat, parser);
  }
  return parser;
}

function zoneFor(timezone: string): Zone {
  let zone = zones.get(timezone);
  if (zone === undefined) {
    const normalized = Info.normalizeZone(timezone);
    zone = normalized.isValid && normalized.type === 'iana' ? new OffsetCachedZone(normalized) : normalized;
    zones.set(timezone, zone);
  }
  return zone;
}

/** Enough hours and minutes for years of reports; past it a cache starts over rather than growing. */
const MAX_CACHED = 600_000;

/**
 * An IANA zone whose UTC offsets are remembered per hour, and per minute inside the few hours that hold an
 * offset change. Luxon asks the zone for offsets two or three times per parsed date (the fast path of
 * parseExecutedAt as well), and each answer costs an Intl.DateTimeFormat call; a report's times fall in a
 * few hundred distinct hours. An hour (or a minute) is cached only when its first and last millisecond have
 * the same offset: offset changes are at least months apart, so the offset is then the same throughout, and
 * a minute holding a change is always asked of the real zone. Cached per minute only, a report spread over
 * a month asks tens of thousands of minutes; per hour, a few hundred (docs/PERFORMANCE.md, "Reading a
 * report").
 */
class OffsetCachedZone extends Zone {
  private readonly hours = new Map<number, number>();
  /** Hours whose ends have different offsets: looked up per minute. */
  private readonly changingHours = new Set<number>();
  private readonly minutes = new Map<number, number>();

  constructor(private readonly inner: Zone) {
    super();
  }

  override get type(): string {
    return this.inner.type;
  }

  override get name(): string {
    return this.inner.name;
  }

  override get isUniversal(): boolean {
    return this.inner.isUniversal;
  }

  override get isValid(): true {
    return true;
  }

  override offsetName(ts: number, options: ZoneOffsetOptions): string {
    return this.inner.offsetName(ts, options) ?? '';
  }

  override formatOffset(ts: number, format: ZoneOffsetFormat): string {
    return this.inner.formatOffset(ts, format);
  }

  override equals(other: Zone): boolean {
    return this.inner.equals(other instanceof OffsetCachedZone ? other.inner : other);
  }

  override offset(ts: number): number {
    const hour = Math.floor(ts / 3_600_000);
    const hourly = this.hours.get(hour);
    if (hourly !== undefined) return hourly;
    if (!this.changingHours.has(hour)) {
      const first = this.inner.offset(hour * 3_600_000);
      const last = this.inner.offset(hour * 3_600_000 + 3_599_999);
      if (first === last) return remember(this.hours, hour, first);
      if (this.changingHours.size >= MAX_CACHED) this.changingHours.clear();
      this.changingHours.add(hour);
    }
    const minute = Math.floor(ts / 60_000);
    const cached = this.minutes.get(minute);
    if (cached !== undefined) return cached;
    const first = this.inner.offset(minute * 60_000);
    const last = this.inner.offset(minute * 60_000 + 59_999);
    if (first !== last) return this.inner.offset(ts);
    return remember(this.minutes, minute, first);
  }
}

function remember(cache: Map<number, number>, key: number, offset: number): number {
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(key, offset);
  return offset;
}

/** Luxon's explanations are written for developers; finance people get the same fact in plain words. */
function explain(reason: string | null, explanation: string | null, dateFormat: string | undefined): string {
  const outOfRange = /you specified (\S+) \(of type \w+\) as an? (\w+), which is invalid/.exec(
    explanation ?? '',
  );
  if (outOfRange !== null) {
    const [, value, unit] = outOfRange;
    return `${unit === 'day' ? 'day of month' : unit} ${value} does not exist`;
  }
  if (reason === 'unparsable') {
    return dateFormat === undefined
      ? 'not an ISO 8601 date-time (like 2024-03-15T14:30:00)'
      : `does not match the date format ${dateFormat}`;
  }
  if (reason === 'unsupported zone') return explanation ?? 'unsupported time zone in the text';
  return explanation ?? reason ?? 'not a valid date-time';
}
