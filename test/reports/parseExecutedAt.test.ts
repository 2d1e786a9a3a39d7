import { expect } from 'chai';
import { DateTime, Settings } from 'luxon';
import { type ExecutedAtFormat, parseExecutedAt } from '../../src/reports/parseExecutedAt.js';

const BR: ExecutedAtFormat = { dateFormat: 'dd/MM/yyyy HH:mm:ss', timezone: 'America/Sao_Paulo' };

function instant(text: string, format: ExecutedAtFormat): string {
  const result = parseExecutedAt(text, format);
  if (!result.ok) throw new Error(`expected ${text} to parse, got: ${result.reason}`);
  return result.value.toISOString();
}

function reason(text: string, format: ExecutedAtFormat): string {
  const result = parseExecutedAt(text, format);
  if (result.ok) throw new Error(`expected ${text} to be refused, got ${result.value.toISOString()}`);
  return result.reason;
}

/**
 * Runs `read` as if the clock said `now`, for luxon (`Settings.now`, which luxon reads for "now", and its
 * per-zone offset guess, cached at the first read of the process) and for the code under test.
 */
function atClock<T>(now: Date, read: () => T): T {
  const saved = Settings.now;
  Settings.now = () => now.getTime();
  Settings.resetCaches();
  try {
    return read();
  } finally {
    Settings.now = saved;
    Settings.resetCaches();
  }
}

/** Summer and winter on both hemispheres, including years when Sao Paulo still had daylight saving time. */
const CLOCKS = [
  new Date('2018-07-15T12:00:00Z'),
  new Date('2019-01-15T12:00:00Z'),
  new Date('2026-07-15T12:00:00Z'),
  new Date('2026-12-15T12:00:00Z'),
];

/**
 * Luxon's own reading made independent of the clock: the later of its readings with the clock in July and
 * in December. They differ only in a repeated hour, where the later one is the standard-time occurrence.
 */
function luxonLater(texts: string[], read: (text: string) => DateTime): DateTime[] {
  const [july, december] = [CLOCKS[2], CLOCKS[3]].map((clock) => atClock(clock, () => texts.map(read)));
  return texts.map((_, i) => (july[i].toMillis() >= december[i].toMillis() ? july[i] : december[i]));
}

describe('parseExecutedAt', () => {
  describe('with a format', () => {
    it('reads local times in the given zone (Sao Paulo is UTC-3)', () => {
      expect(instant('15/03/2024 14:30:00', BR)).to.equal('2024-03-15T17:30:00.000Z');
      expect(instant('31/12/2023 23:59:59', BR)).to.equal('2024-01-01T02:59:59.000Z');
      expect(instant('29/02/2024 00:00:00', BR)).to.equal('2024-02-29T03:00:00.000Z');
    });

    it('uses the offset written in the text when the format has an offset token', () => {
      const format = { dateFormat: 'yyyy-MM-dd HH:mm ZZ', timezone: 'America/Sao_Paulo' };
      expect(instant('2024-03-15 14:30 +02:00', format)).to.equal('2024-03-15T12:30:00.000Z');
    });

    it('refuses impossible dates and times in plain words', () => {
      expect(reason('31/02/2024 10:00:00', BR)).to.equal('day of month 31 does not exist');
      expect(reason('29/02/2023 10:00:00', BR)).to.equal('day of month 29 does not exist');
      expect(reason('10/02/2024 25:00:00', BR)).to.equal('hour 25 does not exist');
      expect(reason('10/13/2024 10:00:00', BR)).to.equal('month 13 does not exist');
      expect(reason('10/02/2024 10:60:00', BR)).to.equal('minute 60 does not exist');
    });

    it('reads 24:00:00 as the next midnight (luxon, as ISO 8601 allows) and refuses anything later in hour 24', () => {
      expect(instant('10/02/2024 24:00:00', BR)).to.equal('2024-02-11T03:00:00.000Z');
      expect(reason('10/02/2024 24:00:01', BR)).to.equal('hour 24 does not exist');
    });

    it('refuses text that does not follow the format', () => {
      const expected = 'does not match the date format dd/MM/yyyy HH:mm:ss';
      expect(reason('2024-03-15T14:30:00', BR)).to.equal(expected);
      expect(reason('15/03/2024', BR)).to.equal(expected);
      expect(reason('1/3/2024 10:00:00', BR)).to.equal(expected);
      expect(reason('', BR)).to.equal(expected);
    });

    it('refuses a local time skipped by a daylight saving change instead of moving it', () => {
      // Brazil moved clocks from 00:00 to 01:00 on 2018-11-04.
      expect(reason('04/11/2018 00:30:00', BR)).to.equal(
        'local time 2018-11-04 00:30:00 does not exist in America/Sao_Paulo (daylight saving gap)',
      );
      expect(instant('03/11/2018 23:59:59', BR)).to.equal('2018-11-04T02:59:59.000Z');
      expect(instant('04/11/2018 01:00:00', BR)).to.equal('2018-11-04T03:00:00.000Z');
    });

    it('does not depend on the process-wide default locale', () => {
      const before = Settings.defaultLocale;
      Settings.defaultLocale = 'ar-EG';
      try {
        expect(instant('15/03/2024 14:30:00', BR)).to.equal('2024-03-15T17:30:00.000Z');
      } finally {
        Settings.defaultLocale = before;
      }
    });
  });

  describe('without a format (ISO 8601)', () => {
    const NY: ExecutedAtFormat = { timezone: 'America/New_York' };

    it('reads times without an offset in the given zone', () => {
      expect(instant('2024-03-15T14:30:00', { timezone: 'America/Sao_Paulo' })).to.equal(
        '2024-03-15T17:30:00.000Z',
      );
      expect(instant('2024-03-15T14:30:00.123', NY)).to.equal('2024-03-15T18:30:00.123Z');
      expect(instant('2024-03-15', NY)).to.equal('2024-03-15T04:00:00.000Z');
      expect(instant('2024-03-15T14:30:00', { timezone: 'UTC' })).to.equal('2024-03-15T14:30:00.000Z');
    });

    it('uses the offset written in the text', () => {
      expect(instant('2024-03-15T14:30:00Z', NY)).to.equal('2024-03-15T14:30:00.000Z');
      expect(instant('2024-03-15T14:30:00+01:00', NY)).to.equal('2024-03-15T13:30:00.000Z');
      // An explicit offset is a fixed instant even inside a local daylight saving gap.
      expect(instant('2024-03-10T02:30:00-05:00', NY)).to.equal('2024-03-10T07:30:00.000Z');
    });

    it('refuses a local time inside a daylight saving gap', () => {
      expect(reason('2024-03-10T02:30:00', NY)).to.equal(
        'local time 2024-03-10 02:30:00 does not exist in America/New_York (daylight saving gap)',
      );
      expect(instant('2024-03-10T01:59:59', NY)).to.equal('2024-03-10T06:59:59.000Z');
      expect(instant('2024-03-10T03:00:00', NY)).to.equal('2024-03-10T07:00:00.000Z');
    });

    it('reads a time in the repeated hour of a backward change as its standard-time occurrence', () => {
      // 01:30 happens twice in New York on 2024-11-03 (EDT then EST); the second (EST) is taken.
      expect(instant('2024-11-03T01:30:00', NY)).to.equal('2024-11-03T06:30:00.000Z');
    });

    it('refuses impossible dates and non-ISO text', () => {
      expect(reason('2024-02-30T10:00:00', NY)).to.equal('day of month 30 does not exist');
      expect(reason('2024-13-01', NY)).to.equal('month 13 does not exist');
      expect(reason('2024-03-15 14:30:00', NY)).to.equal(
        'not an ISO 8601 date-time (like 2024-03-15T14:30:00)',
      );
      expect(reason('yesterday', NY)).to.equal('not an ISO 8601 date-time (like 2024-03-15T14:30:00)');
    });
  });

  it('gives the instants luxon gives, second by second around offset changes (offset cache check)', () => {
    const windows: Array<[string, string]> = [
      ['America/New_York', '2024-03-10T01:55:00'], // spring forward at 02:00
      ['America/New_York', '2024-11-03T00:55:00'], // fall back at 02:00, 01:00-02:00 twice
      ['Australia/Lord_Howe', '2024-10-06T01:55:00'], // a 30-minute change
      ['America/Sao_Paulo', '1913-12-31T23:55:00'], // LMT -03:06:28 to -03:00, in the middle of a minute
    ];
    let gaps = 0;
    for (const [timezone, from] of windows) {
      const start = DateTime.fromISO(from, { zone: 'UTC' });
      // Forwards then backwards, so cached minutes are reused from both sides.
      const forwards = [...Array(20 * 60).keys()];
      const steps = [...forwards, ...[...forwards].reverse()];
      const texts = steps.map((step) => start.plus({ seconds: step }).toFormat("yyyy-MM-dd'T'HH:mm:ss"));
      const plains = luxonLater(texts, (text) => DateTime.fromISO(text, { zone: timezone }));
      for (const [i, text] of texts.entries()) {
        const plain = plains[i];
        const result = parseExecutedAt(text, { timezone });
        if (plain.toFormat("yyyy-MM-dd'T'HH:mm:ss") === text) {
          expect(result, `${timezone} ${text}`).to.deep.equal({ ok: true, value: plain.toJSDate() });
        } else {
          gaps += 1;
          expect(result.ok, `${timezone} ${text}`).to.equal(false);
        }
      }
    }
    // Both passes meet the local times that never existed: 02:00-02:14:59 in New York and at Lord Howe
    // (the windows end there), and 00:00:00-00:06:27 in Sao Paulo in 1914.
    expect(gaps).to.equal(2 * (15 * 60 + 15 * 60 + 6 * 60 + 28));
  });

  describe('fixed-width formats (read without luxon when sure)', () => {
    // The same format with its space quoted is read by luxon alone (quotes are left to luxon), so the two
    // spellings compare the fast path with luxon on the same text.
    const FAST = 'dd/MM/yyyy HH:mm:ss';
    const LUXON = "dd/MM/yyyy' 'HH:mm:ss";
    const both = (text: string, timezone: string) => {
      const fast = parseExecutedAt(text, { dateFormat: FAST, timezone });
      const slow = parseExecutedAt(text, { dateFormat: LUXON, timezone });
      return { fast, slow: slow.ok ? slow : { ok: false, reason: slow.reason.replace(LUXON, FAST) } };
    };

    it('gives the instants luxon gives, second by second around offset changes', () => {
      const windows: Array<[string, string]> = [
        ['America/New_York', '2024-03-10T01:55:00'], // spring forward at 02:00
        ['America/New_York', '2024-11-03T00:55:00'], // fall back at 02:00, 01:00-02:00 twice
        ['Australia/Lord_Howe', '2024-10-06T01:55:00'], // a 30-minute change
        ['America/Sao_Paulo', '2018-11-03T23:55:00'], // the last spring-forward gap in Brazil
        ['America/Sao_Paulo', '1913-12-31T23:55:00'], // LMT -03:06:28 to -03:00, in the middle of a minute
      ];
      let gaps = 0;
      for (const [timezone, from] of windows) {
        const start = DateTime.fromISO(from, { zone: 'UTC' });
        const forwards = [...Array(20 * 60).keys()];
        const steps = [...forwards, ...[...forwards].reverse()];
        const texts = steps.map((step) => start.plus({ seconds: step }).toFormat('dd/MM/yyyy HH:mm:ss'));
        const plains = luxonLater(texts, (text) => DateTime.fromFormat(text, FAST, { zone: timezone }));
        for (const [i, text] of texts.entries()) {
          const { fast, slow } = both(text, timezone);
          expect(fast, `${timezone} ${text}`).to.deep.equal(slow);
          const plain = plains[i];
          if (plain.toFormat(FAST) === text) {
            expect(fast, `${timezone} ${text}`).to.deep.equal({ ok: true, value: plain.toJSDate() });
          } else {
            gaps += 1;
          }
        }
      }
      // New York and Lord Howe 02:00-02:14:59 (the windows end there), Sao Paulo 2018-11-04 00:00-00:14:59
      // and 1914-01-01 00:00:00-00:06:27, each met forwards and backwards.
      expect(gaps).to.equal(2 * (15 * 60 * 3 + 6 * 60 + 28));
    });

    it('agrees with luxon on text that is almost right', () => {
      const texts = [
        '29/02/2024 10:00:00',
        '29/02/2023 10:00:00',
        '31/04/2024 10:00:00',
        '00/01/2024 10:00:00',
        '01/00/2024 10:00:00',
        '15/03/2024 24:00:00', // luxon reads 24:00:00 as the next midnight
        '15/03/2024 24:00:01',
        '15/03/2024 23:60:00',
        '15/03/2024 23:59:60',
        '15/03/0099 10:00:00', // Date.UTC reads years below 100 as 19xx: left to luxon
        '15/03/0100 10:00:00',
        '15/03/9999 23:59:59',
        '15-03-2024 10:00:00',
        '15/03/2024T10:00:00',
        ' 15/03/2024 10:00:00',
        '15/03/2024 10:00:00 ',
        '1/03/2024 10:00:00',
        '15/03/2024 10:00',
        '\u0661\u0665/03/2024 10:00:00',
        '',
      ];
      for (const timezone of ['America/Sao_Paulo', 'UTC', 'Asia/Kolkata', 'UTC+3']) {
        for (const text of texts) {
          const { fast, slow } = both(text, timezone);
          expect(fast, `${timezone} ${JSON.stringify(text)}`).to.deep.equal(slow);
        }
      }
    });

    it('reads other fixed-width layouts and milliseconds', () => {
      const format = { dateFormat: 'yyyyMMdd-HHmmss.SSS', timezone: 'America/Sao_Paulo' };
      expect(instant('20240315-143000.250', format)).to.equal('2024-03-15T17:30:00.250Z');
      expect(instant('2024-03-15', { dateFormat: 'yyyy-MM-dd', timezone: 'UTC' })).to.equal(
        '2024-03-15T00:00:00.000Z',
      );
    });
  });

  it('refuses an unknown time zone', () => {
    expect(reason('2024-03-15T14:30:00', { timezone: 'Mars/Olympus_Mons' })).to.equal(
      'unknown time zone "Mars/Olympus_Mons"',
    );
  });

  /**
   * Issue 16, case 4: before this change the repeated hour was read with the offset in force on the day
   * of the run (luxon's guess from "now", and the fast path's `zone.offset(Settings.now())`), so
   * `26/10/2025 01:30:00` in Europe/London was 01:30Z with the clock in December and 00:30Z in July: the
   * July and 2018 clocks below fail on that code.
   */
  describe('reads the same instant whenever it runs', () => {
    const FORMATS: Array<{ name: string; dateFormat?: string; write: (iso: string) => string }> = [
      {
        name: 'fixed-width dd/MM/yyyy HH:mm:ss (fast path)',
        dateFormat: 'dd/MM/yyyy HH:mm:ss',
        write: fixedWidth,
      },
      { name: 'ISO 8601 without offset', write: (iso) => iso },
      { name: 'MMM d, yyyy h:mm:ss a (luxon tokens)', dateFormat: 'MMM d, yyyy h:mm:ss a', write: american },
    ];
    // Local wall clocks (ISO, no offset) and what they must read as in their zone, on every clock.
    const CASES: Array<{ timezone: string; local: string; expected: string; why: string }> = [
      {
        timezone: 'Europe/London',
        local: '2025-10-26T01:30:00',
        expected: '2025-10-26T01:30:00.000Z',
        why: 'repeated: BST then GMT, GMT taken',
      },
      {
        timezone: 'Europe/London',
        local: '2025-10-26T00:59:59',
        expected: '2025-10-25T23:59:59.000Z',
        why: 'before the repeated hour (BST)',
      },
      {
        timezone: 'Europe/London',
        local: '2025-10-26T02:00:00',
        expected: '2025-10-26T02:00:00.000Z',
        why: 'after it (GMT)',
      },
      {
        timezone: 'Europe/London',
        local: '2025-07-01T12:00:00',
        expected: '2025-07-01T11:00:00.000Z',
        why: 'summer (BST)',
      },
      {
        timezone: 'America/Sao_Paulo',
        local: '2019-02-16T23:30:00',
        expected: '2019-02-17T02:30:00.000Z',
        why: 'repeated: -02 then -03, -03 taken',
      },
      {
        timezone: 'America/Sao_Paulo',
        local: '2019-01-10T12:00:00',
        expected: '2019-01-10T14:00:00.000Z',
        why: 'summer time (-02)',
      },
      {
        timezone: 'America/Sao_Paulo',
        local: '2018-11-04T01:00:00',
        expected: '2018-11-04T03:00:00.000Z',
        why: 'right after the gap',
      },
      {
        timezone: 'America/New_York',
        local: '2024-11-03T01:30:00',
        expected: '2024-11-03T06:30:00.000Z',
        why: 'repeated: EDT then EST, EST taken',
      },
      {
        timezone: 'America/New_York',
        local: '2024-07-04T12:00:00',
        expected: '2024-07-04T16:00:00.000Z',
        why: 'summer (EDT)',
      },
    ];
    const GAPS: Array<{ timezone: string; local: string }> = [
      { timezone: 'Europe/London', local: '2025-03-30T01:30:00' },
      { timezone: 'America/Sao_Paulo', local: '2018-11-04T00:30:00' },
      { timezone: 'America/New_York', local: '2024-03-10T02:30:00' },
    ];

    for (const format of FORMATS) {
      it(`${format.name}: ambiguous times by one rule (standard time), on every clock`, () => {
        for (const clock of CLOCKS) {
          for (const { timezone, local, expected, why } of CASES) {
            const text = format.write(local);
            const got = atClock(clock, () => instant(text, { dateFormat: format.dateFormat, timezone }));
            expect(got, `${timezone} ${text} (${why}) with the clock at ${clock.toISOString()}`).to.equal(
              expected,
            );
          }
        }
      });

      it(`${format.name}: a local time in a spring-forward gap is refused, on every clock`, () => {
        for (const clock of CLOCKS) {
          for (const { timezone, local } of GAPS) {
            const text = format.write(local);
            const why = atClock(clock, () => reason(text, { dateFormat: format.dateFormat, timezone }));
            expect(why, `${timezone} ${text} at ${clock.toISOString()}`).to.match(/daylight saving gap/);
          }
        }
      });
    }

    it('honours an offset or a zone written in the row, on every clock', () => {
      const NY = 'America/New_York';
      for (const clock of CLOCKS) {
        atClock(clock, () => {
          // Both occurrences of London's repeated 01:30, told apart by their offsets.
          expect(instant('2025-10-26T01:30:00+01:00', { timezone: NY })).to.equal('2025-10-26T00:30:00.000Z');
          expect(instant('2025-10-26T01:30:00+00:00', { timezone: NY })).to.equal('2025-10-26T01:30:00.000Z');
          const offsetToken = { dateFormat: 'dd/MM/yyyy HH:mm:ss ZZ', timezone: NY };
          expect(instant('26/10/2025 01:30:00 +01:00', offsetToken)).to.equal('2025-10-26T00:30:00.000Z');
          // A zone name in the row wins over the configured zone; its repeated hour follows the same rule.
          const zoneToken = { dateFormat: 'yyyy-MM-dd HH:mm:ss z', timezone: NY };
          expect(instant('2025-10-26 01:30:00 Europe/London', zoneToken)).to.equal(
            '2025-10-26T01:30:00.000Z',
          );
          expect(instant('2025-07-01 12:00:00 Europe/London', zoneToken)).to.equal(
            '2025-07-01T11:00:00.000Z',
          );
        });
      }
    });
  });
});

/** '2025-10-26T01:30:00' as '26/10/2025 01:30:00'. */
function fixedWidth(iso: string): string {
  return DateTime.fromISO(iso, { zone: 'UTC' }).toFormat('dd/MM/yyyy HH:mm:ss');
}

/** '2025-10-26T01:30:00' as 'Oct 26, 2025 1:30:00 AM'. */
function american(iso: string): string {
  return DateTime.fromISO(iso, { zone: 'UTC' }).toFormat('MMM d, yyyy h:mm:ss a', { locale: 'en-US' });
}
