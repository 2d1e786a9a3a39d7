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
 * Reads the instant a partner says it executed something. Local times are read in `timezone`; a local
 * time that does not exist there (skipped by a daylight saving change) is refused instead of being
 * moved by an hour the way luxon would. Times in the repeated hour of a backward change are ambiguous;
 * luxon picks one offset and so does this function (see the tests).
 */
export function parseExecutedAt(text: string, format: ExecutedAtFormat): ExecutedAtParseResult {
  const zone = zoneFor(format.timezone);
  if (!zone.isValid) return { ok: false, reason: `unknown time zone ${JSON.stringify(format.timezone)}` };

  const parsed = parseIn(text, format.dateFormat, zone);
  if (!parsed.isValid) {
    return { ok: false, reason: explain(parsed.invalidReason, parsed.invalidExplanation, format.dateFormat) };
  }

  // Luxon moves a nonexistent local time forward instead of failing. Reading the same text on a fixed
  // UTC offset, which has no gaps, gives the wall clock as written; if the zoned result shows another
  // wall clock, the written time never existed. Offsets written in the text are fixed zones and need
  // no check (a zone *name* in the text cannot be checked this way: both readings would move alike).
  if (!parsed.zone.isUniversal) {
    const written = parseIn(text, format.dateFormat, FixedOffsetZone.utcInstance);
    if (written.isValid && written.zone.isUniversal && !sameWallClock(parsed, written)) {
      return {
        ok: false,
        reason: `local time ${written.toFormat('yyyy-MM-dd HH:mm:ss')} does not exist in ${parsed.zoneName} (daylight saving gap)`,
      };
    }
  }
  return { ok: true, value: parsed.toJSDate() };
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
    zone = normalized.isValid && normalized.type === 'iana' ? new MinuteCachedZone(normalized) : normalized;
    zones.set(timezone, zone);
  }
  return zone;
}

/** Enough minutes for a year of reports; past it the cache starts over rather than growing. */
const MAX_CACHED_MINUTES = 600_000;

/**
 * An IANA zone whose UTC offsets are remembered per minute. Luxon asks the zone for offsets two or
 * three times per parsed date, and each answer costs an Intl.DateTimeFormat call; that was most of the
 * time spent reading a large report, whose times fall in a few thousand distinct minutes. A minute is
 * cached only when its first and last millisecond have the same offset: offset changes are at least
 * months apart, so the offset is then the same for the whole minute, and a minute holding a change is
 * always asked of the real zone.
 */
class MinuteCachedZone extends Zone {
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
    return this.inner.equals(other instanceof MinuteCachedZone ? other.inner : other);
  }

  override offset(ts: number): number {
    const minute = Math.floor(ts / 60_000);
    const cached = this.minutes.get(minute);
    if (cached !== undefined) return cached;
    const first = this.inner.offset(minute * 60_000);
    const last = this.inner.offset(minute * 60_000 + 59_999);
    if (first !== last) return this.inner.offset(ts);
    if (this.minutes.size >= MAX_CACHED_MINUTES) this.minutes.clear();
    this.minutes.set(minute, first);
    return first;
  }
}

function sameWallClock(a: DateTime, b: DateTime): boolean {
  return (
    a.year === b.year &&
    a.month === b.month &&
    a.day === b.day &&
    a.hour === b.hour &&
    a.minute === b.minute &&
    a.second === b.second &&
    a.millisecond === b.millisecond
  );
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
