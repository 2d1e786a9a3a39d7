import { expect } from 'chai';
import { parseSince, SinceError } from '../../src/shared/since.js';

/**
 * `--since` (CLI) and `?since=` (review site) share one parser. Before, the CLI read `2026-02-31` as 3 March
 * and a time without a zone in the process's zone, and the site refused ages such as `7d`. Each case below is
 * one of those, with what both sides now do.
 */
describe('since: one parser for the CLI and the review site', () => {
  const now = Date.parse('2026-12-01T10:00:00Z');
  const accepted: [string, string][] = [
    ['7d', '2026-11-24T10:00:00.000Z'], // the CLI accepted it, the site refused it
    ['12h', '2026-11-30T22:00:00.000Z'],
    ['30m', '2026-12-01T09:30:00.000Z'],
    ['45s', '2026-12-01T09:59:15.000Z'],
    ['500ms', '2026-12-01T09:59:59.500Z'],
    ['2026-11-28', '2026-11-28T00:00:00.000Z'], // both: midnight UTC
    ['2024-02-29', '2024-02-29T00:00:00.000Z'], // a leap day exists
    ['2026-11-28T12:00Z', '2026-11-28T12:00:00.000Z'],
    ['2026-11-28T12:00:00Z', '2026-11-28T12:00:00.000Z'],
    ['2026-11-28T12:00:00.250-03:00', '2026-11-28T15:00:00.250Z'],
    ['  2026-11-28  ', '2026-11-28T00:00:00.000Z'],
  ];
  for (const [text, iso] of accepted) {
    it(`accepts ${JSON.stringify(text)} as ${iso}`, () => {
      const since = parseSince(text, now);
      expect(since).to.be.instanceOf(Date);
      expect((since as Date).toISOString()).to.equal(iso);
    });
  }

  const refused: [string, RegExp][] = [
    ['2026-02-31', /no such date/], // the CLI read it as 3 March
    ['2025-02-29', /no such date/],
    ['2026-13-01', /no such date/],
    ['2026-11-28T12:00:00', /needs its zone/], // the CLI read it in the process's zone
    ['2026-11-28 12:00:00Z', /not a date/],
    ['2026-11-28T24:00:00Z', /no such date or time/],
    ['2026-11-28T12:60Z', /no such date or time/],
    ['2026-11-28T12:00+25:00', /no such date or time/],
    ['yesterday', /not a date/],
    ['7 days', /not a date/],
    ['-7d', /not a date/],
    ['', /not a date/],
  ];
  for (const [text, reason] of refused) {
    it(`refuses ${JSON.stringify(text)} with words that say how to fix it`, () => {
      const since = parseSince(text, now);
      expect(since).to.be.instanceOf(SinceError);
      const message = (since as SinceError).message;
      expect(message).to.match(reason);
      expect(message).to.include('use a date (2026-11-28), an instant with its zone');
    });
  }
});
