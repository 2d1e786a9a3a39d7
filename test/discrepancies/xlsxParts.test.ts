import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { DiscrepancySummary } from '../../src/discrepancies/discrepancyTypes.js';
import { XlsxLimitError } from '../../src/discrepancies/errors/XlsxLimitError.js';
import { ZipLimitError } from '../../src/discrepancies/errors/ZipLimitError.js';
import { excelSerial } from '../../src/discrepancies/xlsx/excelSerial.js';
import { columnLetters } from '../../src/discrepancies/xlsx/sheetXml.js';
import { spreadsheetText } from '../../src/discrepancies/xlsx/spreadsheetText.js';
import { writeDiscrepanciesXlsx } from '../../src/discrepancies/xlsx/writeDiscrepanciesXlsx.js';
import { xlsxAmount } from '../../src/discrepancies/xlsx/xlsxAmount.js';
import { amountStyle, STYLE } from '../../src/discrepancies/xlsx/xlsxStyles.js';
import { ZipStream } from '../../src/discrepancies/xlsx/zipStream.js';

const execFileAsync = promisify(execFile);

function collect(): { stream: PassThrough; bytes: () => Buffer } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { stream, bytes: () => Buffer.concat(chunks) };
}

/** Whether `bytes` ends with an End of Central Directory record (22 bytes, no comment): a finished archive. */
function finished(bytes: Buffer): boolean {
  return bytes.length >= 22 && bytes.readUInt32LE(bytes.length - 22) === 0x06054b50;
}

describe('XLSX parts: text escaping, amount cells, serials, the ZIP writer', () => {
  describe('spreadsheetText', () => {
    it('leaves ordinary text alone, non-ASCII and emoji included', () => {
      for (const value of [
        'José Ñandú 名前',
        '😀 x',
        '+5511987654321',
        '=1+1',
        '"quoted" \'single\'',
        'tab\tlf\n',
      ])
        expect(spreadsheetText(value)).to.equal(value);
    });

    it('escapes XML, keeps a CR as a character reference, writes what XML cannot carry as _xHHHH_', () => {
      expect(spreadsheetText('a<b>&c')).to.equal('a&lt;b&gt;&amp;c');
      expect(spreadsheetText('cr\rcrlf\r\n')).to.equal('cr&#13;crlf&#13;\n');
      expect(spreadsheetText('\u0000\u0001\u0008\u000b\u000c\u000e\u001f')).to.equal(
        '_x0000__x0001__x0008__x000B__x000C__x000E__x001F_',
      );
      expect(spreadsheetText('\ufffe\uffff')).to.equal('_xFFFE__xFFFF_');
      // Lone surrogates (a high without its low, a low alone); a real pair stays as it is.
      expect(spreadsheetText('a\ud800b\udc00c\ud83d\ude00')).to.equal('a_xD800_b_xDC00_c\ud83d\ude00');
      expect(spreadsheetText('end\ud800')).to.equal('end_xD800_');
    });

    it('escapes the _ of a literal _xHHHH_ (either case) so a reader does not decode it; other underscores stay', () => {
      expect(spreadsheetText('_x0041_')).to.equal('_x005F_x0041_');
      expect(spreadsheetText('a_X004a_b _x005F_')).to.equal('a_x005F_X004a_b _x005F_x005F_');
      expect(spreadsheetText('_x41_ _xZZZZ_ snake_case _x0041')).to.equal('_x41_ _xZZZZ_ snake_case _x0041');
    });

    it('decoding what it wrote (as OOXML readers do) gives back every UTF-16 unit', () => {
      const decode = (xml: string) =>
        xml
          .replace(/_x([0-9A-F]{4})_/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
          .replace(/&#13;/g, '\r')
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&amp;/g, '&');
      const all = Array.from({ length: 0x10000 }, (_, unit) => String.fromCharCode(unit)).join('');
      for (const value of [all, '_x0041__x005F_x0041_', '&lt;_x0041_&amp;'])
        expect(decode(spreadsheetText(value))).to.equal(value);
    });
  });

  describe('xlsxAmount', () => {
    it('a number cell in the currency minor units, more decimals only when the amount has them', () => {
      expect(xlsxAmount('1234', 'JPY')).to.deep.equal({
        kind: 'number',
        value: '1234',
        style: amountStyle(0),
      });
      expect(xlsxAmount('-12.50', 'BRL')).to.deep.equal({
        kind: 'number',
        value: '-12.50',
        style: amountStyle(2),
      });
      expect(xlsxAmount('12.345', 'KWD')).to.deep.equal({
        kind: 'number',
        value: '12.345',
        style: amountStyle(3),
      });
      expect(xlsxAmount('1.2345', 'CLF')).to.deep.equal({
        kind: 'number',
        value: '1.2345',
        style: amountStyle(4),
      });
      expect(xlsxAmount('12.3456', 'BRL')).to.deep.equal({
        kind: 'number',
        value: '12.3456',
        style: amountStyle(4),
      });
      expect(xlsxAmount('12.3000', 'BRL')).to.deep.equal({
        kind: 'number',
        value: '12.3000',
        style: amountStyle(2),
      });
      expect(xlsxAmount('5', 'JPY')).to.deep.equal({ kind: 'number', value: '5', style: amountStyle(0) });
    });

    it('General when the currency or its minor unit is unknown; no cell for null', () => {
      for (const currency of [null, 'XAU', 'XTS', 'ZZZ', 'brl'])
        expect(xlsxAmount('7.25', currency), String(currency)).to.deep.equal({
          kind: 'number',
          value: '7.25',
          style: STYLE.generalNumber,
        });
      expect(xlsxAmount(null, 'BRL')).to.equal(null);
      expect(xlsxAmount('', 'BRL')).to.equal(null);
    });

    it('a text cell with the exact decimal when a double cannot hold it: more than 15 significant digits', () => {
      expect(xlsxAmount('12345678901234567.89', 'BRL')).to.deep.equal({
        kind: 'text',
        value: '12345678901234567.89',
      });
      expect(xlsxAmount('1234567890123.456', 'KWD')).to.deep.equal({
        kind: 'text',
        value: '1234567890123.456',
      });
      expect(xlsxAmount('-9999999999999999', 'JPY')).to.deep.equal({
        kind: 'text',
        value: '-9999999999999999',
      });
      // 15 significant digits exactly, and leading / trailing zeros that are not significant: numbers.
      expect(xlsxAmount('9999999999999.99', 'BRL')).to.deep.equal({
        kind: 'number',
        value: '9999999999999.99',
        style: amountStyle(2),
      });
      expect(xlsxAmount('100000000000000000000', 'JPY')?.kind).to.equal('number');
      expect(xlsxAmount('0.000000000012345', 'BRL')).to.deep.equal({
        kind: 'number',
        value: '0.000000000012345',
        style: amountStyle(15),
      });
      expect(xlsxAmount('0.0000000000000001', 'BRL')).to.deep.equal({
        kind: 'text',
        value: '0.0000000000000001',
      });
      // Not a plain decimal (cannot come from numeric): text, as it is.
      expect(xlsxAmount('1e5', 'BRL')).to.deep.equal({ kind: 'text', value: '1e5' });
    });
  });

  it('excelSerial: days since 1899-12-30 UTC; refuses what Excel cannot count exactly', () => {
    expect(excelSerial(new Date('2025-03-10T12:00:00Z'))).to.equal(45726.5);
    expect(excelSerial(new Date('1970-01-01T00:00:00Z'))).to.equal(25569);
    expect(excelSerial(new Date('1900-03-01T00:00:00Z'))).to.equal(61);
    const ms = excelSerial(new Date('2025-03-10T12:34:56.789Z'));
    expect(Math.round((ms - 25569) * 86_400_000)).to.equal(Date.parse('2025-03-10T12:34:56.789Z'));
    expect(() => excelSerial(new Date('1900-02-28T00:00:00Z'))).to.throw(RangeError, /1900-03-01/);
    expect(() => excelSerial(new Date(Number.NaN))).to.throw(RangeError);
  });

  it('columnLetters: A..Z, AA, AZ, BA, XFD', () => {
    expect([0, 13, 25, 26, 51, 52, 16383].map(columnLetters)).to.deep.equal([
      'A',
      'N',
      'Z',
      'AA',
      'AZ',
      'BA',
      'XFD',
    ]);
  });

  describe('ZipStream', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'zip-stream-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('writes an archive that unzip and Python test and extract byte for byte, entries streamed in pieces', async () => {
      const out = collect();
      const zip = new ZipStream(out.stream, { modifiedAt: new Date('2026-12-01T18:43:30Z') });
      const random = randomBytes(300_000);
      const text = 'José 名前 '.repeat(50_000);
      await zip.addEntry('a.txt', 'hello');
      await zip.addEntry(
        'dir/random.bin',
        (function* () {
          for (let i = 0; i < random.length; i += 7_000) yield random.subarray(i, i + 7_000);
        })(),
      );
      await zip.addEntry(
        'dir/text.txt',
        (async function* () {
          yield text.slice(0, 1000);
          yield text.slice(1000);
        })(),
      );
      await zip.addEntry('empty', '');
      await zip.finish();
      expect(finished(out.bytes())).to.equal(true);
      const file = join(dir, 'test.zip');
      writeFileSync(file, out.bytes());
      const unzip = await execFileAsync('unzip', ['-t', file]);
      expect(unzip.stdout).to.match(/No errors detected/);
      await execFileAsync('python3', ['-m', 'zipfile', '-t', file]);
      await execFileAsync('python3', ['-m', 'zipfile', '-e', file, join(dir, 'x')]);
      expect(readFileSync(join(dir, 'x', 'a.txt'), 'utf8')).to.equal('hello');
      expect(readFileSync(join(dir, 'x', 'dir', 'random.bin')).equals(random)).to.equal(true);
      expect(readFileSync(join(dir, 'x', 'dir', 'text.txt'), 'utf8')).to.equal(text);
      expect(readFileSync(join(dir, 'x', 'empty'), 'utf8')).to.equal('');
      const listing = await execFileAsync('unzip', ['-l', file]);
      expect(listing.stdout).to.contain('2026-12-01 18:43');
    });

    it('refuses an entry past its limit (4 GiB without ZIP64) and never writes the central directory', async () => {
      for (const content of [randomBytes(5_000), Buffer.alloc(50_000)]) {
        const out = collect();
        const zip = new ZipStream(out.stream, { limit: 1_000 });
        let error: unknown;
        try {
          await zip.addEntry('big', [content]);
          await zip.finish();
        } catch (caught) {
          error = caught;
        }
        expect(error).to.be.instanceOf(ZipLimitError);
        expect((error as Error).message).to.match(/^big reached 1000 bytes/);
        expect(finished(out.bytes())).to.equal(false);
      }
    });
  });

  it('writeDiscrepanciesXlsx refuses the 1,048,576th discrepancy (Excel: 1,048,576 rows with the header), memory flat', async function () {
    this.timeout(120_000);
    const row: DiscrepancySummary = {
      id: '1',
      kind: 'orphan_partner_record',
      partner: 'acme-pay',
      status: 'open',
      reference: 'order-1',
      partnerReference: 'NSU-1',
      amountAtRisk: '1234.56',
      currency: 'BRL',
      summary: 'partner row with no intent',
      assignee: null,
      intentId: null,
      runId: null,
      createdAt: new Date(),
      updatedAt: new Date(),
    };
    async function* rows() {
      for (let i = 1; i <= 1_048_576; i++) yield { ...row, id: String(i) };
    }
    let bytes = 0;
    let written = 0;
    let tail = Buffer.alloc(0);
    const out = new PassThrough();
    out.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      tail = Buffer.concat([tail, chunk]).subarray(-22);
    });
    const rssBefore = process.memoryUsage().rss;
    let error: unknown;
    await writeDiscrepanciesXlsx(rows(), out, { onRow: (n) => (written = n) }).catch(
      (caught) => (error = caught),
    );
    expect(error).to.be.instanceOf(XlsxLimitError);
    expect((error as Error).message).to.contain('at most 1048575 discrepancies');
    expect(written).to.equal(1_048_575);
    expect(bytes).to.be.greaterThan(10_000_000);
    expect(finished(tail)).to.equal(false);
    // A million rows went through; the process grew by far less than they weigh uncompressed (~130 MB).
    expect(process.memoryUsage().rss - rssBefore).to.be.lessThan(100 * 1024 * 1024);
  });
});
