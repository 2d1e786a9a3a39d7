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

    it('reads a time in the repeated hour of a backward change with the offset luxon picks', () => {
      // 01:30 happens twice in New York on 2024-11-03 (EDT then EST); luxon takes the second (EST).
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
      for (const step of [...forwards, ...[...forwards].reverse()]) {
        const text = start.plus({ seconds: step }).toFormat("yyyy-MM-dd'T'HH:mm:ss");
        const plain = DateTime.fromISO(text, { zone: timezone });
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
        for (const step of [...forwards, ...[...forwards].reverse()]) {
          const text = start.plus({ seconds: step }).toFormat('dd/MM/yyyy HH:mm:ss');
          const { fast, slow } = both(text, timezone);
          expect(fast, `${timezone} ${text}`).to.deep.equal(slow);
          const plain = DateTime.fromFormat(text, FAST, { zone: timezone });
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
});
