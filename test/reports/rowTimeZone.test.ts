import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import { csvSourceProblems } from '../../src/reports/csvSourceConfig.js';
import type { ReportItem } from '../../src/reports/partnerRow.js';
import { readCsvReport } from '../../src/reports/readCsvReport.js';

const SOURCE: Omit<CsvSourceConfig, 'path'> = {
  type: 'csv',
  dateFormat: 'yyyy-MM-dd HH:mm:ss',
  columns: { reference: 'ref', executedAt: 'created', timeZone: 'tz' },
};

/**
 * A time-zone column per row (`columns.timeZone`, Adyen's `TimeZone`): the same wall clock in CEST and in CET
 * is two instants an hour apart, whatever the reconciler's own zone; a zone that cannot be placed is a
 * rejected row.
 */
describe('CSV reports: a time zone per row', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'row-tz-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function read(
    rows: string[],
    timezone = 'Europe/Amsterdam',
    more: Partial<CsvSourceConfig> = {},
  ): Promise<ReportItem[]> {
    const file = path.join(dir, `tz-${rows.length}-${Math.random().toString(36).slice(2)}.csv`);
    fs.writeFileSync(file, ['ref,created,tz', ...rows, ''].join('\n'));
    const items: ReportItem[] = [];
    for await (const item of readCsvReport(file, { ...SOURCE, ...more, path: file }, { timezone }))
      items.push(item);
    return items;
  }

  it('reads the repeated hour at the end of summer time by the zone each row names', async () => {
    const items = await read([
      'a,2026-10-25 02:30:00,CEST',
      'b,2026-10-25 02:30:00,CET',
      'c,2026-10-25 02:30:00,Europe/Amsterdam',
      'd,2026-07-01 12:00:00,UTC',
      'e,2026-03-29 02:30:00,CET',
    ]);
    expect(
      items.map((item) => (item.kind === 'row' ? item.row.executedAt?.toISOString() : item)),
    ).to.deep.equal([
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
      // A zone name does not say which of the two: the later one, as for the reconciler's own zone.
      '2026-10-25T01:30:00.000Z',
      '2026-07-01T12:00:00.000Z',
      // An abbreviation is its fixed offset: 02:30 CET names an instant even on the night Amsterdam skips 02:30.
      '2026-03-29T01:30:00.000Z',
    ]);
    // Without the column, the same CEST row would be read in the reconciler's zone: the later occurrence.
    const file = path.join(dir, 'no-column.csv');
    fs.writeFileSync(file, 'ref,created,tz\na,2026-10-25 02:30:00,CEST\n');
    const plain: ReportItem[] = [];
    const source = { ...SOURCE, path: file, columns: { reference: 'ref', executedAt: 'created' } };
    for await (const item of readCsvReport(file, source, { timezone: 'Europe/Amsterdam' })) plain.push(item);
    expect(plain[0]!.kind === 'row' && plain[0]!.row.executedAt?.toISOString()).to.equal(
      '2026-10-25T01:30:00.000Z',
    );
  });

  it('rejects a row whose zone is empty, unknown or ambiguous, naming the column', async () => {
    const items = await read([
      'a,2026-10-25 02:30:00,IST',
      'b,2026-10-25 02:30:00,',
      'c,2026-10-25 02:30:00,Mars/Olympus',
      // US Pacific or Philippine time, US Eastern or Australian Eastern: 16 and 15 hours apart.
      'd,2026-10-25 02:30:00,PST',
      'e,2026-10-25 02:30:00,EST',
    ]);
    expect(
      items.map((item) => (item.kind === 'rejected' ? [item.rejected.line, item.rejected.field] : item)),
    ).to.deep.equal([
      [2, 'tz'],
      [3, 'tz'],
      [4, 'tz'],
      [5, 'tz'],
      [6, 'tz'],
    ]);
    const [ist, empty, mars, pst, est] = items.map((item) =>
      item.kind === 'rejected' ? item.rejected : undefined,
    );
    expect(ist!.reason).to.match(
      /^"IST" is not a time-zone abbreviation with one meaning \(known: UTC, GMT, /,
    );
    expect(ist!.identifiers).to.deep.equal({ reference: 'a', partnerReference: null });
    expect(empty!.reason).to.equal('no time zone: the time cannot be placed');
    expect(mars!.reason).to.match(/^"Mars\/Olympus" is not a known time zone/);
    expect(pst!.reason).to.match(/^"PST" is not a time-zone abbreviation with one meaning/);
    expect(est!.reason).to.match(/^"EST" is not a time-zone abbreviation with one meaning/);
  });

  it('refuses a time-zone column without an execution time', () => {
    expect(
      csvSourceProblems({ type: 'csv', path: 'x', columns: { reference: 'ref', timeZone: 'tz' } }),
    ).to.deep.equal(['columns.timeZone names the zone of columns.executedAt, which is not mapped']);
  });

  it("reads an ambiguous abbreviation as the source's own table says (a US account's PST and PDT)", async () => {
    const items = await read(
      ['a,2026-11-01 01:30:00,PDT', 'b,2026-11-01 01:30:00,PST', 'c,2026-11-01 01:30:00,EST'],
      'America/Los_Angeles',
      { timeZoneAbbreviations: { PST: 'UTC-8', PDT: 'UTC-7' } },
    );
    // 01:30 happened twice in Los Angeles that night: first in PDT, then in PST.
    expect(
      items.map((item) => (item.kind === 'row' ? item.row.executedAt?.toISOString() : item.kind)),
    ).to.deep.equal(['2026-11-01T08:30:00.000Z', '2026-11-01T09:30:00.000Z', 'rejected']);
  });

  it('refuses a table of abbreviations that are not fixed offsets, or without a time-zone column', () => {
    const columns = { reference: 'ref', executedAt: 'created', timeZone: 'tz' };
    expect(
      csvSourceProblems({
        type: 'csv',
        path: 'x',
        columns,
        timeZoneAbbreviations: { PST: 'America/Los_Angeles', 'P-T': 'UTC-8', IST: 'UTC+5:30' },
      }),
    ).to.deep.equal([
      "timeZoneAbbreviations.PST must be a fixed offset such as 'UTC-8' or 'UTC+5:30', got \"America/Los_Angeles\"",
      'timeZoneAbbreviations: "P-T" is not an abbreviation (2 to 6 letters)',
    ]);
    expect(
      csvSourceProblems({
        type: 'csv',
        path: 'x',
        columns: { reference: 'ref', executedAt: 'created' },
        timeZoneAbbreviations: { PST: 'UTC-8' },
      }),
    ).to.deep.equal(['timeZoneAbbreviations reads the zones of columns.timeZone, which is not mapped']);
  });
});
