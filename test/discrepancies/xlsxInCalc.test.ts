import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Pool } from 'pg';
import type { DiscrepancySummary } from '../../src/discrepancies/discrepancyTypes.js';
import { XlsxLimitError } from '../../src/discrepancies/errors/XlsxLimitError.js';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import { CSV_COLUMNS } from '../../src/discrepancies/writeDiscrepanciesCsv.js';
import { writeDiscrepanciesXlsx } from '../../src/discrepancies/xlsx/writeDiscrepanciesXlsx.js';
import {
  type CalcCell,
  type CalcWorkbook,
  hasSoffice,
  openXlsxInCalc,
  SOFFICE,
} from '../support/calcCells.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { insertRun, raise } from './seed.js';

const execFileAsync = promisify(execFile);

/**
 * Texts a spreadsheet would type, evaluate or mangle if it could: numeric-looking references, formulas, a
 * phone number, control characters, literal OOXML escapes, XML's own characters, line breaks, non-ASCII.
 */
const TEXTS = [
  '000123',
  '10069930694849051001',
  '8815934509271234',
  '2025-03-10',
  'TRUE',
  '(123)',
  '=1+1',
  '+5511987654321',
  '@SUM(A1)',
  '-3',
  "=cmd|' /C calc'!A0",
  'José Ñandú 名前 😀',
  'ctl\u0001\u0008\u000b\u000c\u001f!',
  '\ufffe\uffff',
  '_x0041_',
  'a_X004a_b _x005F_ _x41_',
  '<b>&amp;</b> "q" \'a\'',
  'cr\rx',
  'lf\ncrlf\r\nend',
  'tab\tx',
  '  padded  ',
] as const;

/** Amounts as `numeric` stores them, the currency, and what Calc must show (en-US) or hold as text. */
const AMOUNTS: readonly [string | null, string | null, { type: string; text: string }][] = [
  ['1234', 'JPY', { type: 'float', text: '1,234' }],
  ['-12.50', 'BRL', { type: 'float', text: '-12.50' }],
  ['1234.56', 'BRL', { type: 'float', text: '1,234.56' }],
  ['12.345', 'KWD', { type: 'float', text: '12.345' }],
  ['-1.2345', 'CLF', { type: 'float', text: '-1.2345' }],
  ['12.3456', 'BRL', { type: 'float', text: '12.3456' }],
  ['7.25', null, { type: 'float', text: '7.25' }],
  // More than 15 significant digits: a double would show 12345678901234600.
  ['12345678901234567.89', 'BRL', { type: 'string', text: '12345678901234567.89' }],
  [null, null, { type: 'empty', text: '' }],
];

const column = (name: (typeof CSV_COLUMNS)[number]) => CSV_COLUMNS.indexOf(name);

/**
 * What Calc holds for a text: a multi-line cell is paragraphs, so CR LF is one break. (A lone CR it keeps
 * in a one-line cell; in a cell that also has LF it makes it a break too: Calc's model, not the file's.)
 */
const heldByCalc = (value: string) => value.replace(/\r\n/g, '\n');

async function xlsxOf(sql: Pool, partner: string): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await writeDiscrepanciesXlsx(
    streamDiscrepancies(sql, { partner: [partner], sort: 'createdAt', direction: 'asc' }),
    out,
  );
  return Buffer.concat(chunks);
}

describe('XLSX export opened in LibreOffice Calc: every column typed, every value exact', function () {
  this.timeout(180_000);
  const db = useFreshDatabase('xlsx_calc');
  let sql: Pool;
  let rows: DiscrepancySummary[];
  let bytes: Buffer;
  let book: CalcWorkbook;
  let dir: string;
  let runId: string;
  let intentId: string;

  before(async function () {
    if (!hasSoffice()) {
      if (process.env.CI) throw new Error(`${SOFFICE} does not exist; .ci/run installs libreoffice-calc`);
      this.skip();
    }
    sql = sqlPool(db.url);
    dir = mkdtempSync(join(tmpdir(), 'xlsx-calc-'));
    runId = await insertRun(sql, 'xlsx-pay');
    intentId = (
      await sql.query<{ id: string }>(
        `INSERT INTO intents (partner, operation, key, fingerprint, status, attempt)
         VALUES ('xlsx-pay', 'charge', 'k-1', 'f', 'unknown', 1) RETURNING id`,
      )
    ).rows[0].id;
    const seeded: string[] = [];
    for (const text of TEXTS)
      seeded.push(
        await raise(sql, {
          partner: 'xlsx-pay',
          kind: 'orphan_partner_record',
          reference: text,
          partnerReference: text,
          summary: `summary ${text}`,
          runId,
          intentId,
        }),
      );
    for (const [amountAtRisk, currency] of AMOUNTS)
      seeded.push(await raise(sql, { partner: 'xlsx-pay', amountAtRisk, currency, reference: null }));
    for (const [i, id] of seeded.entries()) {
      await sql.query(
        `UPDATE discrepancies
            SET created_at = timestamptz '2025-03-10T12:34:56.789Z' + $2 * interval '1 second',
                updated_at = timestamptz '2025-03-10T12:34:56.789Z' + $2 * interval '1 second' + interval '90 minutes',
                assignee = $3
          WHERE id = $1`,
        [id, i, i < TEXTS.length ? TEXTS[i] : null],
      );
    }
    rows = [];
    for await (const row of streamDiscrepancies(sql, {
      partner: ['xlsx-pay'],
      sort: 'createdAt',
      direction: 'asc',
    }))
      rows.push(row);
    expect(rows).to.have.length(TEXTS.length + AMOUNTS.length);
    bytes = await xlsxOf(sql, 'xlsx-pay');
    book = await openXlsxInCalc(bytes);
  });
  after(async () => {
    await sql?.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is a well-formed ZIP of the six SpreadsheetML parts (unzip -t, python3 -m zipfile -t)', async () => {
    const file = join(dir, 'export.xlsx');
    writeFileSync(file, bytes);
    const unzip = await execFileAsync('unzip', ['-t', file]);
    expect(unzip.stdout).to.contain('No errors detected in compressed data');
    await execFileAsync('python3', ['-m', 'zipfile', '-t', file]);
    const names = (await execFileAsync('unzip', ['-Z1', file])).stdout.trim().split('\n');
    expect(names).to.deep.equal([
      '[Content_Types].xml',
      '_rels/.rels',
      'xl/_rels/workbook.xml.rels',
      'xl/styles.xml',
      'xl/worksheets/sheet1.xml',
      'xl/workbook.xml',
    ]);
    const sheet = (
      await execFileAsync('unzip', ['-p', file, 'xl/worksheets/sheet1.xml'], { maxBuffer: 1 << 26 })
    ).stdout;
    // Header frozen (Calc headless keeps no view settings to read back) and filtered over every row.
    expect(sheet).to.contain('<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>');
    expect(sheet).to.contain(`<autoFilter ref="A1:N${rows.length + 1}"/>`);
    expect(sheet).not.to.match(/<f[ >]/);
  });

  it('Calc reads the header, the autofilter over every row, and no formula anywhere', () => {
    expect(book.rows[0].map((cell) => [cell.type, cell.text])).to.deep.equal(
      CSV_COLUMNS.map((name) => [
        'string',
        name === 'createdAt' || name === 'updatedAt' ? `${name} (UTC)` : name,
      ]),
    );
    expect(book.rows).to.have.length(rows.length + 1);
    expect(book.xml).to.match(
      new RegExp(
        `table:target-range-address="Discrepancies\\.A1:Discrepancies\\.N${rows.length + 1}"[^>]*table:display-filter-buttons="true"`,
      ),
    );
    expect(book.xml).not.to.contain('table:formula');
  });

  it('every text column is a text cell with the exact characters: no typing, no formula, no apostrophe', () => {
    for (const [i, text] of TEXTS.entries()) {
      const cells = book.rows[i + 1];
      const texts = book.texts[i + 1];
      for (const [name, expected] of [
        ['kind', 'orphan_partner_record'],
        ['partner', 'xlsx-pay'],
        ['status', 'open'],
        ['reference', text],
        ['partnerReference', text],
        ['currency', 'BRL'],
        ['summary', `summary ${text}`],
        ['assignee', text],
      ] as const) {
        const what = `${name} of row ${i + 1} (${JSON.stringify(text)})`;
        expect(cells[column(name)].type, what).to.equal('string');
        // The CSV Calc saves holds the cell's characters, control characters included (the .fods cannot).
        expect(texts[column(name)], what).to.equal(heldByCalc(expected));
      }
    }
    // The .fods text agrees wherever XML can carry the characters.
    expect(book.rows[1 + TEXTS.indexOf('=1+1')][column('reference')]).to.deep.equal({
      type: 'string',
      text: '=1+1',
    });
    expect(book.rows[1 + TEXTS.indexOf('_x0041_')][column('reference')].text).to.equal('_x0041_');
  });

  it('amounts are number cells in the currency minor units (JPY, BRL, KWD, CLF, negative), text past 15 digits', () => {
    for (const [j, [amount, currency, expected]] of AMOUNTS.entries()) {
      const cell: CalcCell | undefined = book.rows[1 + TEXTS.length + j][column('amountAtRisk')];
      const what = `${amount} ${currency}`;
      expect(cell?.type ?? 'empty', what).to.equal(expected.type);
      expect(cell?.text ?? '', what).to.equal(expected.text);
      if (expected.type === 'float') expect(Number(cell?.value), what).to.equal(Number(amount));
      else expect(cell?.value, what).to.equal(undefined);
    }
    // Summable: the number cells hold exactly the stored decimals.
    expect(book.rows[1 + TEXTS.length + 3][column('amountAtRisk')].value).to.equal('12.345');
  });

  it('ids are number cells; createdAt / updatedAt are UTC date-time cells; an empty value is an empty cell', () => {
    for (const [i, row] of rows.entries()) {
      const cells = book.rows[i + 1];
      expect([cells[column('id')].type, cells[column('id')].value]).to.deep.equal(['float', row.id]);
      for (const name of ['createdAt', 'updatedAt'] as const) {
        const cell = cells[column(name)];
        const instant = row[name];
        expect(cell.type, name).to.equal('date');
        expect(cell.text, name).to.equal(instant.toISOString().slice(0, 19).replace('T', ' '));
        // Calc writes the value to the 1/100 s: the stored millisecond is within 5 ms of it.
        expect(Math.abs(Date.parse(`${cell.dateValue}Z`) - instant.getTime()), name).to.be.at.most(5);
      }
      const hasIntent = i < TEXTS.length;
      for (const [name, value] of [
        ['intentId', hasIntent ? intentId : null],
        ['runId', hasIntent ? runId : null],
        ['reference', hasIntent ? row.reference : null],
        ['assignee', hasIntent ? row.assignee : null],
      ] as const) {
        const cell: CalcCell | undefined = cells[column(name)];
        if (value === null) expect(cell?.type ?? 'empty', `${name} of row ${i + 1}`).to.equal('empty');
        else if (name === 'intentId' || name === 'runId')
          expect([cell.type, cell.value], name).to.deep.equal(['float', value]);
      }
    }
    expect(rows[0].createdAt.toISOString()).to.equal('2025-03-10T12:34:56.789Z');
    expect(book.rows[1][column('createdAt')].text).to.equal('2025-03-10 12:34:56');
    expect(book.rows[1][column('updatedAt')].text).to.equal('2025-03-10 14:04:56');
  });

  it('refuses a text over 32,767 characters (Excel cell limit), naming the discrepancy and column; 32,767 is written', async () => {
    const fits = await raise(sql, { partner: 'long-pay', summary: 'x'.repeat(32_767) });
    const fitting = await xlsxOf(sql, 'long-pay');
    const longest = (await openXlsxInCalc(fitting)).texts[1][column('summary')];
    expect(longest).to.equal('x'.repeat(32_767));
    const tooLong = await raise(sql, { partner: 'long-pay', partnerReference: `${'9'.repeat(32_767)}0` });
    let error: unknown;
    await xlsxOf(sql, 'long-pay').catch((caught) => (error = caught));
    expect(error).to.be.instanceOf(XlsxLimitError);
    expect((error as Error).message).to.equal(
      `discrepancy ${tooLong}: partnerReference is 32768 characters, more than the 32767 an Excel cell holds; ` +
        'nothing was cut: export CSV or JSON, which keep it whole, or filter it out',
    );
    expect(fits).not.to.equal(tooLong);
  });
});
