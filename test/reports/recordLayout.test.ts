import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { ReconcilerConfigError } from '../../src/reconcile/errors/ReconcilerConfigError.js';
import { validateReconciler } from '../../src/reconcile/validateReconciler.js';
import { type CsvSourceConfig, csvSourceProblems } from '../../src/reports/csvSourceConfig.js';
import { ReportFormatError } from '../../src/reports/errors/ReportFormatError.js';
import type { ReportItem } from '../../src/reports/partnerRow.js';
import { readCsvReport } from '../../src/reports/readCsvReport.js';

/** A small layout in PayPal's shape: H header, D rows, P preamble, S section (period), C section count, E end. */
const LAYOUT = {
  header: 'H',
  data: ['D'],
  ignore: ['P'],
  coverage: { record: 'S', from: 1, to: 2 },
  counts: [
    { record: 'C', position: 1, since: 'S' },
    { record: 'E', position: 1 },
  ],
  end: 'E',
};
const SOURCE: CsvSourceConfig = {
  type: 'csv',
  path: 'unused',
  columns: { reference: 'ref', partnerReference: 'id', amount: 'amount', currency: 'currency' },
  records: LAYOUT,
};

let dir: string;
let count = 0;

function write(content: string | Buffer, name = `report-${++count}.csv`): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

async function readAll(file: string, source: CsvSourceConfig = SOURCE): Promise<ReportItem[]> {
  const items: ReportItem[] = [];
  for await (const item of readCsvReport(file, source, { timezone: 'UTC' })) items.push(item);
  return items;
}

async function readError(file: string, source: CsvSourceConfig = SOURCE): Promise<ReportFormatError> {
  try {
    await readAll(file, source);
  } catch (error) {
    expect(error).to.be.instanceOf(ReportFormatError);
    return error as ReportFormatError;
  }
  throw new Error(`expected reading ${file} to fail`);
}

/** Items as short comparable strings. */
function shown(items: ReportItem[]): string[] {
  return items.map((item) => {
    if (item.kind === 'row') return `${item.row.line}: ${item.row.reference} ${item.row.amount}`;
    if (item.kind === 'rejected')
      return `${item.rejected.line}: rejected ${item.rejected.field}: ${item.rejected.reason}`;
    const unclosed = item.coverage.unclosed ? ` (promises nothing: ${item.coverage.unclosed})` : '';
    return `${item.coverage.line}: covers ${item.coverage.from.toISOString()} ${item.coverage.to.toISOString()}${unclosed}`;
  });
}

const GOOD =
  [
    'P,report of the day',
    'S,2026-11-30T00:00:00Z,2026-11-30T23:59:59Z',
    'H,ref,id,amount,currency',
    'D,order-1,n1,10.00,BRL',
    '',
    'D,order-2,n2,20.00,BRL',
    'C,2',
    'E,2',
  ].join('\n') + '\n';

describe('CSV record layouts (records: header, data, ignore, coverage, counts, end)', () => {
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'record-layout-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads rows with the header record`s names, declares the section`s period once its count closes it, keeps physical lines', async () => {
    expect(shown(await readAll(write(GOOD)))).to.deep.equal([
      '4: order-1 10.00',
      '6: order-2 20.00',
      '2: covers 2026-11-30T00:00:00.000Z 2026-11-30T23:59:59.000Z',
    ]);
  });

  it('a section its count never closes (a day split over files, a cut file) declares a period that promises nothing', async () => {
    const open = GOOD.replace('C,2\n', '');
    expect(shown(await readAll(write(open)))).to.deep.equal([
      '4: order-1 10.00',
      '6: order-2 20.00',
      '2: covers 2026-11-30T00:00:00.000Z 2026-11-30T23:59:59.000Z (promises nothing: the S section from line 2 is not closed by its C record (a report split over several files, or a file cut short))',
    ]);
  });

  it('without a section count, the period is declared once the end record and its count prove the file whole', async () => {
    const layout = { ...LAYOUT, counts: [{ record: 'E', position: 1 }] };
    const source = { ...SOURCE, records: layout };
    expect(shown(await readAll(write(GOOD.replace('C,2\n', '')), source))).to.deep.equal([
      '4: order-1 10.00',
      '6: order-2 20.00',
      '2: covers 2026-11-30T00:00:00.000Z 2026-11-30T23:59:59.000Z',
    ]);
  });

  it('reads the same through csv-parse (quoted fields, a line break inside one) as through the fast path', async () => {
    const quoted = GOOD.replace('D,order-1,n1', 'D,"order-1","n1"').replace(
      'P,report of the day',
      'P,"report\nof the day"',
    );
    // The preamble's quoted line break makes every later record one line further down.
    expect(shown(await readAll(write(quoted)))).to.deep.equal([
      '5: order-1 10.00',
      '7: order-2 20.00',
      '3: covers 2026-11-30T00:00:00.000Z 2026-11-30T23:59:59.000Z',
    ]);
  });

  it('a header record per section: each section is read with its own names; each section declares its period and is counted', async () => {
    const file = write(
      [
        'S,2026-11-30T00:00:00Z,2026-11-30T23:59:59Z',
        'H,ref,id,amount,currency',
        'D,order-1,n1,10.00,BRL',
        'C,1',
        'S,2026-11-30T00:00:00Z,2026-11-30T12:00:00Z',
        'H,currency,amount,id,ref,extra',
        'D,USD,30.00,n3,order-3,x',
        'D,USD,40.00,n4,order-4,x',
        'C,2',
        'E,3',
      ].join('\r\n') + '\r\n',
    );
    const items = await readAll(file);
    expect(shown(items)).to.deep.equal([
      '3: order-1 10.00',
      '1: covers 2026-11-30T00:00:00.000Z 2026-11-30T23:59:59.000Z',
      '7: order-3 30.00',
      '8: order-4 40.00',
      '5: covers 2026-11-30T00:00:00.000Z 2026-11-30T12:00:00.000Z',
    ]);
    expect(items.flatMap((item) => (item.kind === 'row' ? [item.row.currency] : []))).to.deep.equal([
      'BRL',
      'USD',
      'USD',
    ]);
  });

  it('an unknown record type is one rejected row (line, field, reason); the rows around it are read', async () => {
    const file = write(GOOD.replace('C,2', 'X,order-2,whatever\nC,2'));
    expect(shown(await readAll(file))).to.deep.equal([
      '4: order-1 10.00',
      '6: order-2 20.00',
      '7: rejected record type (position 0): "X" is not a record type of this report (known: H, D, P, S, C, E); the record is not guessed',
      '2: covers 2026-11-30T00:00:00.000Z 2026-11-30T23:59:59.000Z',
    ]);
  });

  it('a data row of the wrong width is rejected as any row is', async () => {
    const items = await readAll(write(GOOD.replace('D,order-2,n2,20.00,BRL', 'D,order-2,n2,20.00')));
    expect(shown(items)[1]).to.equal('6: rejected *: expected 5 fields as in the header, found 4');
  });

  describe('what breaks the structure fails the file, naming file, line and record', () => {
    const cases: [string, (text: string) => string, RegExp, { line?: number; field?: string }][] = [
      [
        'a row before any header record',
        (t) =>
          t
            .replace('H,ref,id,amount,currency\n', '')
            .replace('P,report of the day', 'P,x\nD,order-0,n0,1.00,BRL\nH,ref,id,amount,currency'),
        /line 2: a D record before any H record: its columns have no names/,
        { line: 2 },
      ],
      [
        'a section count that is one short',
        (t) => t.replace('C,2', 'C,1'),
        /line 7: the C record counts 1 D record\(s\) in its S section, but 2 were read/,
        { line: 7, field: 'C position 1' },
      ],
      [
        'a file count that is one more',
        (t) => t.replace('E,2', 'E,3'),
        /line 8: the E record counts 3 D record\(s\) in the file, but 2 were read/,
        { line: 8, field: 'E position 1' },
      ],
      [
        'a count that is not a number',
        (t) => t.replace('C,2', 'C,two'),
        /the C record's count "two" is not a whole number/,
        { line: 7 },
      ],
      [
        'a file that ends before its end record',
        (t) => t.replace('\nE,2', ''),
        /line 7: the file ends without its E record: it was cut short or is partial/,
        { line: 7 },
      ],
      [
        'a record after the end record',
        (t) => `${t}D,order-3,n3,30.00,BRL\n`,
        /line 9: a "D" record after the E record that ends the file \(line 8\)/,
        { line: 9 },
      ],
      [
        'a period that cannot be read',
        (t) => t.replace('2026-11-30T23:59:59Z', 'tomorrow'),
        /line 2: the S record's end "tomorrow" is not a valid date-time/,
        { line: 2, field: 'S position 2' },
      ],
      [
        'a period that ends before it starts',
        (t) => t.replace('2026-11-30T23:59:59Z', '2026-11-29T00:00:00Z'),
        /line 2: the S record's period ends before it starts/,
        { line: 2 },
      ],
      [
        'no header record at all',
        (t) =>
          t
            .replace('H,ref,id,amount,currency\n', '')
            .replace(/D,[^\n]*\n?/g, '')
            .replace('C,2', 'C,0')
            .replace('E,2', 'E,0'),
        /no H record \(the names of the data columns\) in the file/,
        {},
      ],
    ];
    for (const [name, change, message, where] of cases) {
      it(name, async () => {
        const file = write(change(GOOD));
        const error = await readError(file);
        expect(error.message).to.match(message);
        expect(error.message.startsWith(file)).to.equal(true);
        expect(error.file).to.equal(file);
        if (where.line !== undefined) expect(error.line).to.equal(where.line);
        if (where.field !== undefined) expect(error.field).to.equal(where.field);
      });
    }
  });

  describe('gzipped files', () => {
    it('are read streamed, by their magic bytes, whatever their name, with the same items', async () => {
      const plain = await readAll(write(GOOD));
      expect(await readAll(write(gzipSync(GOOD), `report-${++count}.csv.gz`))).to.deep.equal(plain);
      expect(await readAll(write(gzipSync(GOOD), `report-${++count}.csv`))).to.deep.equal(plain);
    });

    it('a gzipped file cut short fails as a whole, never reads as a shorter file', async () => {
      const zipped = gzipSync(GOOD);
      const error = await readError(write(zipped.subarray(0, zipped.length - 12), `cut-${++count}.csv.gz`));
      expect(error.message).to.match(/not a complete gzip file .*cut short or is corrupt/);
    });

    it('a .gz name on a file that is not gzip fails naming it', async () => {
      const file = write(GOOD, `fake-${++count}.csv.gz`);
      const error = await readError(file);
      expect(error.message).to.match(/not a complete gzip file/);
      expect(error.file).to.equal(file);
    });

    it('a large gzipped file is read a chunk at a time (rows beyond any one chunk, in order)', async () => {
      const rows = Array.from({ length: 50_000 }, (_, i) => `D,order-${i},n${i},${i}.00,BRL`);
      const text =
        [
          'S,2026-11-30T00:00:00Z,2026-11-30T23:59:59Z',
          'H,ref,id,amount,currency',
          ...rows,
          'C,50000',
          'E,50000',
        ].join('\n') + '\n';
      let read = 0;
      let last = '';
      for await (const item of readCsvReport(write(gzipSync(text), `big-${++count}.csv.gz`), SOURCE, {
        timezone: 'UTC',
      })) {
        if (item.kind === 'row') {
          read += 1;
          last = item.row.reference!;
        }
      }
      expect(read).to.equal(50_000);
      expect(last).to.equal('order-49999');
    });
  });

  describe('settings', () => {
    it('names each problem of a layout', () => {
      const problems = csvSourceProblems({
        ...SOURCE,
        records: {
          typeColumn: -1,
          header: 'H',
          data: ['D', 'H'],
          coverage: { record: 'S', from: 1, to: -2 },
          counts: [{ record: 'C', position: 1, since: 'Z' }],
        },
      });
      expect(problems).to.deep.equal([
        'records.typeColumn must be a position (a whole number >= 0)',
        'records.coverage.to must be a position (a whole number >= 0)',
        'records: record type "H" is both header and data',
        'records.counts: since "Z" is not a record type of the layout',
      ]);
      expect(csvSourceProblems({ ...SOURCE, records: { header: 'H', data: [] } })).to.deep.equal([
        'records.data must list the record types that hold rows, such as ["SB"]',
      ]);
      expect(
        csvSourceProblems({
          ...SOURCE,
          records: { header: 'H', data: ['D'], coverage: { record: 'S', from: 0, to: 1 } },
        }),
      ).to.deep.equal(['records.coverage.from is the position of the record type']);
    });

    it('the validator knows coverage.fromReport and the records settings, and what fromReport needs', () => {
      const base = { partner: 'p', schedule: '0 * * * *' };
      const problems = (config: object): readonly string[] => {
        try {
          validateReconciler(config, 'p.ts');
          return [];
        } catch (error) {
          if (!(error instanceof ReconcilerConfigError)) throw error;
          return error.problems;
        }
      };
      expect(problems({ ...base, coverage: { fromReport: true }, source: SOURCE })).to.deep.equal([]);
      expect(
        problems({
          ...base,
          coverage: { fromReport: true },
          source: { ...SOURCE, records: { header: 'H', data: ['D'] } },
        }),
      ).to.deep.equal([
        "coverage.fromReport needs source.records.coverage: the record that declares the period (such as PayPal's SH)",
      ]);
      // A declared period with nothing that proves what follows it whole: a file cut after it would prove
      // absent everything that was cut.
      for (const records of [
        { ...LAYOUT, counts: [], end: undefined },
        { ...LAYOUT, counts: [{ record: 'E', position: 1 }], end: undefined },
        { ...LAYOUT, counts: [], end: 'E' },
      ]) {
        expect(
          problems({ ...base, coverage: { fromReport: true }, source: { ...SOURCE, records } }),
        ).to.deep.equal([
          'coverage.fromReport needs a record that proves the declared part whole: a count since "S" in source.records.counts (such as PayPal\'s SC), or an end record and a whole-file count (source.records.end and counts)',
        ]);
      }
      expect(
        problems({
          ...base,
          coverage: { fromReport: true },
          source: { ...SOURCE, records: { ...LAYOUT, counts: [{ record: 'E', position: 1 }] } },
        }),
      ).to.deep.equal([]);
      expect(
        problems({
          ...base,
          coverage: { fromReport: true },
          source: { type: 'api', baseUrl: 'http://127.0.0.1', path: '/x', fields: { reference: 'r' } },
        }),
      ).to.deep.equal([
        'coverage.fromReport: an API listing declares the window it was asked for; leave coverage out',
      ]);
      expect(problems({ ...base, coverage: { fromReport: 'yes' }, source: SOURCE })).to.deep.equal([
        'coverage.fromReport must be true (leave coverage out to declare none)',
      ]);
      const typos = problems({
        ...base,
        source: { ...SOURCE, records: { ...LAYOUT, headr: 'H', coverage: { ...LAYOUT.coverage, form: 1 } } },
      });
      expect(
        typos.some((p) =>
          p.startsWith('source.records.headr is not a known setting (did you mean source.records.header?)'),
        ),
      ).to.equal(true);
      expect(
        typos.some((p) =>
          p.startsWith(
            'source.records.coverage.form is not a known setting (did you mean source.records.coverage.from?)',
          ),
        ),
      ).to.equal(true);
    });
  });
});
