import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import type { Pool } from 'pg';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import {
  CSV_COLUMNS,
  type CsvSeparator,
  writeDiscrepanciesCsv,
} from '../../src/discrepancies/writeDiscrepanciesCsv.js';
import { writeDiscrepanciesXlsx } from '../../src/discrepancies/xlsx/writeDiscrepanciesXlsx.js';
import { type CalcSheet, hasSoffice, openInCalc, openXlsxInCalc, SOFFICE } from '../support/calcCells.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise } from './seed.js';

/** Windows LCID of Portuguese (Brazil): the locale the `;` export is written for (README). */
const PT_BR = 1046;

/**
 * References partners really send that a spreadsheet would type if it could: an NSU with leading zeros, a
 * 20-digit Cielo TID, a 16-digit Adyen pspReference (more digits than a double holds), a reference that
 * looks like a date, one that looks like a boolean, one in accounting parentheses.
 */
const NUMERIC_LOOKING = [
  '000123',
  '10069930694849051001',
  '8815934509271234',
  '2025-03-10',
  'TRUE',
  '(123)',
] as const;

/** Amounts as `numeric` stores them, two and three minor units (KWD, BHD, TND have three). */
const AMOUNTS = [
  ['-12.50', 'BRL'],
  ['1234.56', 'BRL'],
  ['12.345', 'KWD'],
  ['1.000', 'BHD'],
] as const;

function csvOf(sql: Pool, partner: string, separator: CsvSeparator): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  return writeDiscrepanciesCsv(
    streamDiscrepancies(sql, { partner: [partner], sort: 'createdAt', direction: 'asc' }),
    out,
    {
      separator,
    },
  ).then(() => Buffer.concat(chunks));
}

function xlsxOf(sql: Pool, partner: string): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  return writeDiscrepanciesXlsx(
    streamDiscrepancies(sql, { partner: [partner], sort: 'createdAt', direction: 'asc' }),
    out,
  ).then(() => Buffer.concat(chunks));
}

const column = (name: (typeof CSV_COLUMNS)[number]) => CSV_COLUMNS.indexOf(name);

/**
 * The exports finance opens in a spreadsheet: our references must come back as the text they are (a
 * reference is looked up in the partner's portal; 8815934509271234 read as 8.81593450927123E+15 is another
 * payment), and amounts as the numbers they are in the locale each export is written for.
 */
describe('Exports opened in LibreOffice Calc: references stay text (XLSX), amounts stay exact numbers (`;` CSV in pt-BR)', function () {
  this.timeout(180_000);
  const db = useFreshDatabase('calc_typing');
  let sql: Pool;

  before(function () {
    if (!hasSoffice()) {
      if (process.env.CI) throw new Error(`${SOFFICE} does not exist; .ci/run installs libreoffice-calc`);
      this.skip();
    }
    sql = sqlPool(db.url);
  });
  after(async () => {
    await sql?.end();
  });

  it('in the XLSX export (for spreadsheets), a reference or partner reference that looks like a number, date or boolean is a text cell with its exact characters', async () => {
    for (const [i, reference] of NUMERIC_LOOKING.entries()) {
      const id = await raise(sql, { partner: 'refs-pay', reference, partnerReference: reference });
      await sql.query(
        `UPDATE discrepancies SET created_at = now() + $2 * interval '1 second' WHERE id = $1`,
        [id, i],
      );
    }
    // A CSV has no types: every spreadsheet guesses them, so this holds for the typed export only.
    const sheet: CalcSheet = await openXlsxInCalc(await xlsxOf(sql, 'refs-pay'));
    const read = sheet.rows.slice(1).map((cells) => ({
      reference: [cells[column('reference')].type, cells[column('reference')].text],
      partnerReference: [cells[column('partnerReference')].type, cells[column('partnerReference')].text],
    }));
    expect(read).to.deep.equal(
      NUMERIC_LOOKING.map((reference) => ({
        reference: ['string', reference],
        partnerReference: ['string', reference],
      })),
    );
  });

  it('the `;` export opened by a pt-BR Calc (what it is for) reads every amount as the number stored', async () => {
    for (const [i, [amountAtRisk, currency]] of AMOUNTS.entries()) {
      const id = await raise(sql, { partner: 'ptbr-pay', amountAtRisk, currency });
      await sql.query(
        `UPDATE discrepancies SET created_at = now() + $2 * interval '1 second' WHERE id = $1`,
        [id, i],
      );
    }
    const sheet = await openInCalc(await csvOf(sql, 'ptbr-pay', 'semicolon'), ';', { language: PT_BR });
    const amounts = sheet.rows.slice(1).map((cells) => {
      const cell = cells[column('amountAtRisk')];
      return [cell.type, cell.value === undefined ? cell.text : String(Number(cell.value))];
    });
    // A text cell cannot be summed (SUM gives 0); 12.345 KWD read as 12345 is a thousand times the risk.
    expect(amounts).to.deep.equal(AMOUNTS.map(([amount]) => ['float', String(Number(amount))]));
  });
});
