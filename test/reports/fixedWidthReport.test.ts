import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { expect } from 'chai';
import cielo from '../../reconcilers/cielo.js';
import { ReportFormatError } from '../../src/reports/errors/ReportFormatError.js';
import type { FixedWidthSourceConfig } from '../../src/reports/fixedWidthSourceConfig.js';
import { fixedWidthSourceProblems } from '../../src/reports/fixedWidthSourceConfig.js';
import type { PartnerRow, ReportItem } from '../../src/reports/partnerRow.js';
import { readFixedWidthReportBatches } from '../../src/reports/readFixedWidthReport.js';

const FIXTURE = path.join(
  __dirname,
  '../../../test/fixtures/partners/cielo/CIELO03_1234567890_20261201_0000001.txt',
);
const CIELO = cielo.source as FixedWidthSourceConfig;
/**
 * Cielo's layout, with its header's period read as a declaration: the reader supports a header that declares
 * the period its file is complete for, though Cielo's own is read off the file's rows and its reconciler
 * declares no coverage (reconcilers/cielo.ts).
 */
const SOURCE: FixedWidthSourceConfig = {
  ...CIELO,
  header: {
    ...CIELO.header!,
    period: { from: 'Período inicial', to: 'Período final', dateFormat: 'yyyyMMdd' },
  },
};
const TZ = 'America/Sao_Paulo';

/** The fixture's records (without line ends), to derive malformed files from. */
function fixtureRecords(): string[] {
  return fs.readFileSync(FIXTURE, 'latin1').split('\r\n').slice(0, -1);
}

/** `text` with `value` written over it from 1-based `start`. */
function overwrite(text: string, start: number, value: string): string {
  return text.slice(0, start - 1) + value + text.slice(start - 1 + value.length);
}

let dir: string;
let count = 0;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fixed-width-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(records: string[], end = '\r\n'): string {
  const file = path.join(dir, `cielo-${++count}.txt`);
  fs.writeFileSync(file, records.join('\r\n') + end, 'latin1');
  return file;
}

async function read(file: string, source = SOURCE): Promise<ReportItem[]> {
  const items: ReportItem[] = [];
  for await (const batch of readFixedWidthReportBatches(file, source, { timezone: TZ })) items.push(...batch);
  return items;
}

async function failure(file: string, source = SOURCE): Promise<ReportFormatError> {
  try {
    await read(file, source);
  } catch (error) {
    expect(error).to.be.instanceOf(ReportFormatError);
    return error as ReportFormatError;
  }
  throw new Error(`expected ${file} to fail`);
}

const rows = (items: ReportItem[]): PartnerRow[] =>
  items.flatMap((item) => (item.kind === 'row' ? [item.row] : []));
const rejections = (items: ReportItem[]) =>
  items.flatMap((item) => (item.kind === 'rejected' ? [item.rejected] : []));

/** Line of the fixture's first record 2 (the sale of order-3001). */
const SALE_LINE = 3;

describe('fixed-width reports (Cielo EDI, 250 positions)', () => {
  it('the shipped layout has no configuration problem', () => {
    expect(fixedWidthSourceProblems(SOURCE)).to.deep.equal([]);
  });

  it('reads every record of the fixture: sales, a rejected sale, cancellations, a chargeback, a fee and the ROs', async () => {
    const items = await read(FIXTURE);
    expect(rejections(items)).to.deep.equal([]);
    const summary = rows(items).map((r) => [
      r.line,
      r.kind ?? 'execution',
      r.reference,
      r.partnerReference,
      r.amount,
    ]);
    expect(summary).to.deep.equal([
      [2, 'ignored', null, null, null],
      [3, 'execution', 'order-3001', '000101', '25.00'],
      [4, 'execution', 'order-3002', '000102', '40.00'],
      [5, 'execution', 'order-3002', '000103', '40.00'],
      [6, 'execution', 'order-3003', '000104', '19.99'],
      [7, 'execution', 'order-3999', '000199', '12.00'],
      [8, 'failed', 'order-3006', '000106', '35.00'],
      [9, 'ignored', null, null, null],
      [10, 'reversal', 'order-3001', '000101', '-25.00'],
      [11, 'reversal', 'order-3005', '000105', '-30.00'],
      [12, 'ignored', null, null, null],
      [13, 'reversal', 'order-3002', '000103', '-40.00'],
      [14, 'ignored', null, null, null],
      [15, 'ignored', null, '000000', null],
    ]);
    // The header's period, 30 November in São Paulo, the last day included, comes first.
    expect(items[0]).to.deep.equal({
      kind: 'declaration',
      coverage: {
        line: 1,
        from: new Date('2026-11-30T03:00:00.000Z'),
        to: new Date('2026-12-01T03:00:00.000Z'),
      },
    });
    const sale = rows(items)[1]!;
    // Data da venda 20261130 and Hora da transação 100012, São Paulo time (UTC-3).
    expect(sale.executedAt?.toISOString()).to.equal('2026-11-30T13:00:12.000Z');
    expect(sale.currency).to.equal('BRL');
  });

  it('reads LF and CR line ends and a file without a final line end alike', async () => {
    const records = fixtureRecords();
    expect(rows(await read(write(records, '')))).to.have.length(14);
    const lf = path.join(dir, 'lf.txt');
    fs.writeFileSync(lf, `${records.join('\n')}\n`, 'latin1');
    expect(rows(await read(lf))).to.have.length(14);
    const cr = path.join(dir, 'cr.txt');
    fs.writeFileSync(cr, `${records.join('\r')}\r`, 'latin1');
    expect(rows(await read(cr))).to.have.length(14);
  });

  it('reads a gzipped file as it streams, and fails a cut one', async () => {
    const { gzipSync } = await import('node:zlib');
    const whole = gzipSync(fs.readFileSync(FIXTURE));
    const file = path.join(dir, 'cielo.txt.gz');
    fs.writeFileSync(file, whole);
    expect(rows(await read(file))).to.have.length(14);
    const cut = path.join(dir, 'cielo-cut.txt.gz');
    fs.writeFileSync(cut, whole.subarray(0, whole.length - 40));
    await failure(cut);
  });

  it('a record of the wrong length fails the file, naming its line', async () => {
    const records = fixtureRecords();
    records[SALE_LINE - 1] = records[SALE_LINE - 1]!.slice(0, 249);
    const error = await failure(write(records));
    expect(error.line).to.equal(SALE_LINE);
    expect(error.message).to.include('line 3: record is 249 characters long');
    const padded = fixtureRecords();
    padded[4] = `${padded[4]} `;
    expect((await failure(write(padded))).line).to.equal(5);
  });

  it('a record too long by a UTF-8 BOM or by UTF-8 accented letters says so', async () => {
    const bom = path.join(dir, 'cielo-bom.txt');
    fs.writeFileSync(bom, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), fs.readFileSync(FIXTURE)]));
    const first = await failure(bom);
    expect(first.line).to.equal(1);
    expect(first.message).to.include('record is 253 characters long');
    expect(first.message).to.include('UTF-8 byte-order mark (BOM)');
    // Read as UTF-8, the decoder drops a leading mark itself.
    expect(rows(await read(bom, { ...SOURCE, encoding: 'utf8' }))).to.have.length(14);
    // "São Paulo" written in UTF-8 where the layout's blanks are (the CV's Uso Cielo, 219-250).
    const records = fixtureRecords();
    const file = path.join(dir, 'cielo-utf8.txt');
    fs.writeFileSync(
      file,
      Buffer.concat([
        Buffer.from(`${records.slice(0, 2).join('\r\n')}\r\n`, 'latin1'),
        Buffer.from(`${overwrite(records[2]!, 220, 'São Paulo')}\r\n`, 'utf8'),
        Buffer.from(`${records.slice(3).join('\r\n')}\r\n`, 'latin1'),
      ]),
    );
    const accented = await failure(file);
    expect(accented.line).to.equal(3);
    expect(accented.message).to.include('record is 251 characters long');
    expect(accented.message).to.include('the file looks UTF-8 encoded');
    // Any other excess is what it was.
    const padded = fixtureRecords();
    padded[2] = `${padded[2]}   `;
    expect((await failure(write(padded))).message).to.include('a cut, padded or shifted record');
  });

  it('a DOS end-of-file mark (Ctrl-Z) alone after the trailer is read past; a record after it still fails', async () => {
    const records = fixtureRecords();
    const marked = path.join(dir, 'cielo-ctrl-z.txt');
    fs.writeFileSync(marked, `${records.join('\r\n')}\r\n\x1a`, 'latin1');
    expect(rows(await read(marked))).to.have.length(14);
    const ownLine = path.join(dir, 'cielo-ctrl-z-line.txt');
    fs.writeFileSync(ownLine, `${records.join('\r\n')}\r\n\x1a\r\n`, 'latin1');
    expect(rows(await read(ownLine))).to.have.length(14);
    const then = path.join(dir, 'cielo-ctrl-z-then.txt');
    fs.writeFileSync(then, `${records.join('\r\n')}\r\n\x1a\r\n${records[2]}\r\n`, 'latin1');
    expect((await failure(then)).message).to.include('a record after the trailer (line 16)');
    // Glued to a record it is no mark: that record is the wrong length.
    const glued = path.join(dir, 'cielo-ctrl-z-glued.txt');
    fs.writeFileSync(glued, `${records.join('\r\n')}\x1a`, 'latin1');
    const gluedError = await failure(glued);
    expect(gluedError.message).to.include('line 16: record is 251 characters long');
    expect(gluedError.message).to.include('DOS end-of-file mark (Ctrl-Z)');
  });

  it('an unknown record type is a rejected row without identifiers, never guessed nor skipped', async () => {
    const records = fixtureRecords();
    records.splice(9, 0, overwrite(records[9]!, 1, '7'));
    // The trailer counts the inserted record too, as Cielo's would.
    records[records.length - 1] = overwrite(records[records.length - 1]!, 2, '00000000015');
    const items = await read(write(records));
    expect(rejections(items)).to.deep.equal([
      {
        line: 10,
        field: 'Tipo de registro',
        reason: '"7" is not a known record type (known: 1, 2); the record is not guessed at',
      },
    ]);
  });

  it('a trailer that counts other than what was read fails the file', async () => {
    const records = fixtureRecords();
    records.splice(5, 1);
    const error = await failure(write(records));
    expect(error.field).to.equal('Total de registro');
    expect(error.message).to.include('the trailer counts 14 records (Total de registro) but 13 were read');
  });

  it('a file cut before its trailer fails: it proves nothing', async () => {
    const records = fixtureRecords().slice(0, 10);
    const error = await failure(write(records));
    expect(error.message).to.include('ends at line 10 without its trailer record (type 9)');
    // Cut in the middle of a record: a short last record, which fails first.
    const cut = fixtureRecords().slice(0, 8);
    cut[7] = cut[7]!.slice(0, 120);
    expect((await failure(write(cut, ''))).message).to.include('line 8: record is 120 characters long');
  });

  it('a record after the trailer, a missing header or a header of another file option fails the file', async () => {
    const after = fixtureRecords();
    after.push(after[2]!);
    expect((await failure(write(after))).message).to.include('a record after the trailer (line 16)');
    const noHeader = fixtureRecords().slice(1);
    expect((await failure(write(noHeader))).message).to.include('the first record must be the header');
    const payments = fixtureRecords();
    payments[0] = overwrite(payments[0]!, 48, '04');
    const error = await failure(write(payments));
    expect(error.field).to.equal('Opção de extrato');
    const empty = path.join(dir, 'empty.txt');
    fs.writeFileSync(empty, '');
    expect((await failure(empty)).message).to.include('no header record');
  });

  it('a bad implied-decimal value is a rejected row naming the field, with the identifiers it still has', async () => {
    const records = fixtureRecords();
    records[SALE_LINE - 1] = overwrite(records[SALE_LINE - 1]!, 47, '00000000025,0');
    records[3] = overwrite(records[3]!, 47, '         4000');
    const items = await read(write(records));
    expect(rejections(items)).to.deep.equal([
      {
        line: 3,
        field: 'Valor da compra ou valor da parcela',
        reason: '"00000000025,0" is not 13 digits with 2 implied decimals',
        identifiers: { reference: 'order-3001', partnerReference: '000101' },
      },
      {
        line: 4,
        field: 'Valor da compra ou valor da parcela',
        reason: '"         4000" is not 13 digits with 2 implied decimals',
        identifiers: { reference: 'order-3002', partnerReference: '000102' },
      },
    ]);
  });

  it('a bad sign is a rejected row naming the sign position', async () => {
    const records = fixtureRecords();
    records[SALE_LINE - 1] = overwrite(records[SALE_LINE - 1]!, 46, ' ');
    records[3] = overwrite(records[3]!, 46, 'C');
    const found = rejections(await read(write(records)));
    expect(found.map((r) => [r.line, r.field, r.identifiers])).to.deep.equal([
      [
        3,
        'Sinal do valor da compra ou valor da parcela',
        { reference: 'order-3001', partnerReference: '000101' },
      ],
      [
        4,
        'Sinal do valor da compra ou valor da parcela',
        { reference: 'order-3002', partnerReference: '000102' },
      ],
    ]);
    expect(found[1]!.reason).to.equal('"C" is not a known debit/credit indicator (known: -, +)');
  });

  it('an unknown transaction type, adjustment origin or rejection code is a rejected row: the kind is not guessed', async () => {
    const records = fixtureRecords();
    records[1] = overwrite(records[1]!, 24, '09'); // the sales RO: every CV under it
    records[13] = overwrite(records[13]!, 146, '99'); // the fee's RO
    const found = rejections(await read(write(records)));
    expect(found.map((r) => r.line)).to.deep.equal([3, 4, 5, 6, 7, 15]);
    expect(found[0]!.field).to.equal('Motivo da rejeição');
    expect(found[0]!.reason).to.include('Tipo de Transação "09"');
    const rejection = fixtureRecords();
    rejection[7] = overwrite(rejection[7]!, 64, '999');
    expect(rejections(await read(write(rejection))).map((r) => r.line)).to.deep.equal([8]);
  });

  it('a CV whose sign contradicts its kind is rejected naming the sign: a debit under a sales RO is not a sale', async () => {
    const records = fixtureRecords();
    records[SALE_LINE - 1] = overwrite(records[SALE_LINE - 1]!, 46, '-'); // a sale of order-3001
    records[9] = overwrite(records[9]!, 46, '+'); // the cancellation of order-3001 (origem 17)
    records[11] = overwrite(records[11]!, 24, '02'); // the chargeback's RO (origem 28) as a credit
    records[13] = overwrite(records[13]!, 146, '33'); // the fee's RO as an estorno de cancelamento, a credit
    const found = rejections(await read(write(records)));
    expect(found.map((r) => [r.line, r.field])).to.deep.equal([
      [3, 'Sinal do valor da compra ou valor da parcela'],
      [10, 'Sinal do valor da compra ou valor da parcela'],
      [13, 'Sinal do valor da compra ou valor da parcela'],
      [15, 'Sinal do valor da compra ou valor da parcela'],
    ]);
    expect(found[0]!.reason).to.include('a sale (Tipo de Transação 01) is a credit ("+")');
    expect(found[0]!.identifiers).to.deep.equal({ reference: 'order-3001', partnerReference: '000101' });
    // Credited back under an ajuste a crédito, the estorno de cancelamento is a reversal.
    const undone = fixtureRecords();
    undone[13] = overwrite(overwrite(undone[13]!, 24, '02'), 146, '33');
    undone[14] = overwrite(undone[14]!, 46, '+');
    const items = await read(write(undone));
    expect(rejections(items)).to.deep.equal([]);
    expect(rows(items).find((row) => row.line === 15)?.kind).to.equal('reversal');
  });

  it('a CV with no RO before it is rejected (its kind comes from the RO)', async () => {
    const records = fixtureRecords();
    records.splice(1, 1);
    records[records.length - 1] = overwrite(records[records.length - 1]!, 2, '00000000013');
    const found = rejections(await read(write(records)));
    expect(found.map((r) => [r.line, r.field])).to.deep.equal([
      [2, 'Tipo de Transação'],
      [3, 'Tipo de Transação'],
      [4, 'Tipo de Transação'],
      [5, 'Tipo de Transação'],
      [6, 'Tipo de Transação'],
      [7, 'Tipo de Transação'],
    ]);
  });

  it('a CV naming another RO than the one before it is rejected naming the field, with its identifiers', async () => {
    const records = fixtureRecords();
    // The cancellation of order-3001 (line 10) names RO 0000002, the cancellation RO; a sales RO moved
    // between them would give it Tipo 01. Its Estabelecimento Submissor must be the RO's too.
    records.splice(9, 0, overwrite(records[1]!, 12, '0000009'));
    records[records.length - 1] = overwrite(records[records.length - 1]!, 2, '00000000015');
    records[11] = overwrite(records[11]!, 2, '1234567891');
    const found = rejections(await read(write(records)));
    expect(found).to.deep.equal([
      {
        line: 11,
        field: 'Número do RO',
        reason:
          'Número do RO "0000002" is not that of the record of type "1" before it (line 10, Número do RO "0000009"), ' +
          'which its Tipo de Transação, Origem do ajuste would come from: which record it belongs to is not guessed',
        identifiers: { reference: 'order-3001', partnerReference: '000101' },
      },
      {
        line: 12,
        field: 'Número do RO',
        reason: found[1]!.reason,
        identifiers: { reference: 'order-3005', partnerReference: '000105' },
      },
    ]);
    const establishment = fixtureRecords();
    establishment[9] = overwrite(establishment[9]!, 2, '1234567891');
    const [other] = rejections(await read(write(establishment)));
    expect(other).to.deep.include({ line: 10, field: 'Estabelecimento Submissor' });
  });

  it('a date that does not exist is a rejected row naming the joined date and time fields', async () => {
    const records = fixtureRecords();
    records[SALE_LINE - 1] = overwrite(records[SALE_LINE - 1]!, 38, '20261131');
    const [found] = rejections(await read(write(records)));
    expect(found).to.deep.include({ line: 3, field: 'Data da venda/ajuste + Hora da transação' });
  });

  it('a header period that is no date, or that ends before it starts, fails the file', async () => {
    const bad = fixtureRecords();
    bad[0] = overwrite(bad[0]!, 20, '20261131');
    expect((await failure(write(bad))).field).to.equal('Período inicial');
    const backwards = fixtureRecords();
    backwards[0] = overwrite(backwards[0]!, 20, '20261201');
    expect((await failure(write(backwards))).message).to.include("the header's period ends");
  });

  it('names a configuration problem with its setting', () => {
    const broken: FixedWidthSourceConfig = {
      ...SOURCE,
      records: {
        ...SOURCE.records,
        '2': {
          ...SOURCE.records['2']!,
          columns: { reference: 'Pedido' },
          fields: [{ name: 'X', start: 249, length: 5 }],
        },
      },
    };
    const problems = fixedWidthSourceProblems(broken);
    expect(problems).to.include('records["2"].fields[0] (X) ends at 253, past the record length 250');
    const record = SOURCE.records['2']!;
    const badKey = fixedWidthSourceProblems({
      ...SOURCE,
      records: {
        ...SOURCE.records,
        '2': {
          ...record,
          inherit: {
            ...record.inherit!,
            key: { 'Número do RO': 'Numero', TID: 'Número do RO', Pedido: 'x' },
          },
        },
      },
    });
    expect(badKey).to.include(
      'records["2"].inherit.key["Número do RO"]: "Numero" is not a field of records["1"]',
    );
    expect(badKey).to.include(
      'records["2"].inherit.key["TID"]: the two fields differ in length (20 and 7), so they can never be equal',
    );
    expect(badKey).to.include('records["2"].inherit.key: "Pedido" is not a field of this record');
    expect(
      problems.some((p) => p.includes('records["2"].columns.reference: "Pedido" is not a field')),
    ).to.equal(true);
  });

  it('streams with flat memory: a file of 200,000 records is read a chunk at a time', async function () {
    this.timeout(60_000);
    const records = fixtureRecords();
    const file = path.join(dir, 'big.txt');
    const out = fs.openSync(file, 'w');
    fs.writeSync(out, `${records[0]}\r\n${records[1]}\r\n`, null, 'latin1');
    const sale = records[SALE_LINE - 1]!;
    const chunk = `${Array(1000).fill(sale).join('\r\n')}\r\n`;
    for (let i = 0; i < 200; i++) fs.writeSync(out, chunk, null, 'latin1');
    fs.writeSync(
      out,
      `${overwrite(records[records.length - 1]!, 2, String(200_001).padStart(11, '0'))}\r\n`,
      null,
      'latin1',
    );
    fs.closeSync(out);
    const gc = exposeGc();
    gc();
    const start = process.memoryUsage().heapUsed;
    let seen = 0;
    let largest = 0;
    let peak = 0;
    for await (const batch of readFixedWidthReportBatches(file, SOURCE, { timezone: TZ })) {
      seen += batch.length;
      largest = Math.max(largest, batch.length);
      if (seen % 20_000 < batch.length) {
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed - start);
      }
    }
    expect(seen).to.equal(200_002); // the header's declaration, the RO and 200,000 sales
    expect(largest).to.be.at.most(256);
    // 50 MB of records, 200,000 rows: what stays held is a chunk and a batch, far below either.
    expect(peak).to.be.below(20 * 1024 * 1024);
  });
});

/** Forcing collection makes the heap reading mean "retained", not "not yet collected" (as csvReport.test.ts). */
function exposeGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc: unknown = vm.runInNewContext('gc');
  if (typeof gc !== 'function') throw new Error('could not expose the garbage collector');
  return gc as () => void;
}
