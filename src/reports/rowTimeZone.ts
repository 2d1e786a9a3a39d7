import { Info } from 'luxon';

/**
 * Time-zone abbreviations a report may name per row (Adyen's `TimeZone` column: `CET` / `CEST`), each the one
 * UTC offset it means. Only abbreviations that mean one offset everywhere are here: `IST` (India, Ireland,
 * Israel), `CST` (US Central, China, Cuba), `BST` (British Summer Time, Bangladesh), `EST` (US Eastern,
 * Australian Eastern), `PST` (US Pacific, Philippines) or `MST` (US Mountain, Malaysia) are not, and a row
 * naming one is rejected rather than read at a guessed offset. An abbreviation is read as its fixed offset,
 * never as the IANA zone of the same name (`CET` in the IANA database has summer time): that is what tells
 * the two occurrences of the hour repeated when summer time ends apart (02:30 CEST is 00:30Z, 02:30 CET
 * 01:30Z), which a zone name alone cannot.
 */
const ABBREVIATIONS: Readonly<Record<string, string>> = {
  UTC: 'UTC',
  GMT: 'UTC',
  WET: 'UTC',
  WEST: 'UTC+1',
  CET: 'UTC+1',
  CEST: 'UTC+2',
  EET: 'UTC+2',
  EEST: 'UTC+3',
  MSK: 'UTC+3',
  BRT: 'UTC-3',
  EDT: 'UTC-4',
  MDT: 'UTC-6',
  PDT: 'UTC-7',
  HST: 'UTC-10',
  JST: 'UTC+9',
  AEST: 'UTC+10',
  AEDT: 'UTC+11',
};

export type RowTimeZone = { ok: true; zone: string } | { ok: false; reason: string };

/**
 * The zone a row's time is written in, from the text of its time-zone column: an abbreviation of
 * {@link ABBREVIATIONS} (its fixed offset) or an IANA name with an area (`Europe/Amsterdam`; a local time
 * repeated in it is read as its later occurrence, as for the reconciler's own zone). Anything else, an
 * abbreviation that means several offsets included, is a reason to reject the row. `own` is the source's
 * `timeZoneAbbreviations`: what an abbreviation means in this partner's reports (in a US account's, `PST` is
 * Pacific time), checked before the table above.
 */
export function rowTimeZone(text: string, own?: Readonly<Record<string, string>>): RowTimeZone {
  if (text === '') return { ok: false, reason: 'no time zone: the time cannot be placed' };
  if (own !== undefined && Object.hasOwn(own, text)) return { ok: true, zone: own[text]! };
  if (Object.hasOwn(ABBREVIATIONS, text)) return { ok: true, zone: ABBREVIATIONS[text]! };
  if (text.includes('/') && Info.normalizeZone(text).isValid) return { ok: true, zone: text };
  const shown = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
  return {
    ok: false,
    reason: /^[A-Za-z]{2,6}$/.test(text)
      ? `${shown} is not a time-zone abbreviation with one meaning (known: ${Object.keys(ABBREVIATIONS).join(', ')}); the offset is not guessed`
      : `${shown} is not a known time zone (an abbreviation such as CET, or an IANA name such as Europe/Amsterdam)`,
  };
}

/** A fixed offset as `timeZoneAbbreviations` takes it: `UTC`, `UTC-8`, `UTC+5:30`. */
const FIXED_OFFSET = /^UTC([+-](\d|1[0-4])(:(00|15|30|45))?)?$/;

/** Everything wrong with a source's `timeZoneAbbreviations`, each as text; empty when it is valid. */
export function timeZoneAbbreviationProblems(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [`${where} must map abbreviations to fixed offsets, such as { PST: 'UTC-8', PDT: 'UTC-7' }`];
  const problems: string[] = [];
  for (const [abbreviation, offset] of Object.entries(value)) {
    if (!/^[A-Za-z]{2,6}$/.test(abbreviation))
      problems.push(`${where}: ${JSON.stringify(abbreviation)} is not an abbreviation (2 to 6 letters)`);
    // A fixed offset, never an IANA zone: an abbreviation names one side of a change of offset, and that
    // is what it is read for.
    if (typeof offset !== 'string' || !FIXED_OFFSET.test(offset))
      problems.push(
        `${where}.${abbreviation} must be a fixed offset such as 'UTC-8' or 'UTC+5:30', got ${JSON.stringify(offset)}`,
      );
  }
  return problems;
}
