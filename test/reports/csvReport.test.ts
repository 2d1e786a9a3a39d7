import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { expect } from 'chai';
import fc from 'fast-check';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import { ReportFormatError } from '../../src/reports/errors/ReportFormatError.js';
import type { RejectedRow, ReportItem } from '../../src/reports/partnerRow.js';
import { readCsvReport } from '../../src/reports/readCsvReport.js';
import { MAX_FIELD_CHARS } from '../../src/reports/toItem.js';

const HEADER = 'reference,partner_ref,amount,currency,executed_at';
const COLUMNS = {
  reference: 'reference',
  partnerReference: 'partner_ref',
  amount: 'amount',
  currency: 'currency',
  executedAt: 'executed_at',
};
const AT = '2024-03-15T10:00:00Z';
const AT_ISO = '2024-03-15T10:00:00.000Z';

let dir: string;
let fileCount = 0;

function write(content: string | Buffer): string {
  fileCount += 1;
  const file = path.join(dir, `report-${fileCount}.csv`);
  fs.writeFileSync(file, content);
  return file;
}

function config(file: string, overrides: Partial<CsvSourceConfig> = {}): CsvSourceConfig {
  return { type: 'csv', path: file, columns: COLUMNS, ...overrides };
}

async function readAll(file: string, source: CsvSourceConfig, timezone = 'UTC'): Promise<ReportItem[]> {
  const items: ReportItem[] = [];
  for await (const item of readCsvReport(file, source, { timezone })) items.push(item);
  return items;
}

/** Reads until the reader throws; returns what came before and the error (failing if none came). */
async function readUntilError(
  file: string,
  source: CsvSourceConfig,
  timezone = 'UTC',
): Promise<{ items: ReportItem[]; error: Error }> {
  const items: ReportItem[] = [];
  try {
    for await (const item of readCsvReport(file, source, { timezone })) items.push(item);
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    return { items, error };
  }
  throw new Error(`expected reading ${file} to fail, got ${items.length} items`);
}

async function formatError(file: string, source: CsvSourceConfig): Promise<ReportFormatError> {
  const { error } = await readUntilError(file, source);
  expect(error).to.be.instanceOf(ReportFormatError);
  return error as ReportFormatError;
}

function row(
  line: number,
  reference: string | null,
  partnerReference: string | null,
  amount: string | null,
  currency: string | null,
  executedAt: string | null,
): ReportItem {
  return {
    kind: 'row',
    row: {
      line,
      reference,
      partnerReference,
      amount,
      currency,
      executedAt: executedAt === null ? null : new Date(executedAt),
    },
  };
}

type Identifiers = NonNullable<RejectedRow['identifiers']>;

/** For {@link rejected}: the record could not be read as far as its identifiers, so the rejection has none. */
const NO_IDENTIFIERS = Symbol('no identifiers');

/** The identifiers a rejection carries: read although something else was wrong, `null` where there are none. */
function ids(reference: string | null, partnerReference: string | null): Identifiers {
  return { reference, partnerReference };
}

/** The file's last record, without a line break after it (its last physical line `lastLine`). */
function unterminated(
  line: number,
  lastLine: number,
  identifiers: Identifiers | typeof NO_IDENTIFIERS,
): ReportItem {
  const reason = `the file ends without a line break after line ${lastLine}: it may be cut short, so this record is not read and the run proves no intent absent`;
  const base = { line, field: '*', reason, unterminated: true as const };
  return {
    kind: 'rejected',
    rejected: identifiers === NO_IDENTIFIERS ? base : { ...base, identifiers },
  };
}

/** Every rejection states its identifiers, or that it has none ({@link NO_IDENTIFIERS}). */
function rejected(
  line: number,
  field: string,
  reason: string,
  identifiers: Identifiers | typeof NO_IDENTIFIERS,
): ReportItem {
  return {
    kind: 'rejected',
    rejected: identifiers === NO_IDENTIFIERS ? { line, field, reason } : { line, field, reason, identifiers },
  };
}

describe('readCsvReport', () => {
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csv-report-'));
  });
  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('Brazilian acquirer dialect', () => {
    const text =
      [
        'Relatório de vendas "março/2024"', // 1: a title with stray quotes is skipped unread
        'Estabelecimento: Padaria São João; CNPJ 00.000.000/0001-00', // 2
        '', // 3
        'PEDIDO;NSU;VALOR;DATA;CIDADE;DESCRIÇÃO', // 4: header
        'AÇÃO-001;000123;1.234,56;15/03/2024 14:30:00;São Paulo;Ação promocional', // 5
        'PED-002;000124;-0,50;01/01/2024 00:00:00;Belém;Estorno', // 6
        ';000125;10,00;31/12/2023 23:59:59;Curitiba;Sem pedido', // 7
        'PED-004;;12.000.000,01;29/02/2024 12:00:00;Maceió;"Parcela 1; de 3"', // 8
        'PED-005;000126;1.234,56;31/02/2024 10:00:00;Natal;Data impossível', // 9
        'PED-006;000127;1.23,4;01/03/2024 10:00:00;Natal;Valor mal agrupado', // 10
      ].join('\r\n') + '\r\n';
    const source = (file: string, encoding: CsvSourceConfig['encoding']): CsvSourceConfig => ({
      type: 'csv',
      path: file,
      delimiter: ';',
      encoding,
      skipLines: 3,
      decimalSeparator: ',',
      thousandsSeparator: '.',
      dateFormat: 'dd/MM/yyyy HH:mm:ss',
      columns: {
        reference: 'PEDIDO',
        partnerReference: 'NSU',
        amount: 'VALOR',
        currency: { value: 'BRL' },
        executedAt: 'DATA',
      },
    });

    it('reads latin1 bytes, decimal commas and local Sao Paulo times as exact values and UTC instants', async () => {
      const bytes = Buffer.from(text, 'latin1');
      expect(bytes.length).to.equal(text.length); // one byte per character: really latin1, not UTF-8
      const file = write(bytes);
      expect(await readAll(file, source(file, 'latin1'), 'America/Sao_Paulo')).to.deep.equal([
        row(5, 'AÇÃO-001', '000123', '1234.56', 'BRL', '2024-03-15T17:30:00.000Z'),
        row(6, 'PED-002', '000124', '-0.50', 'BRL', '2024-01-01T03:00:00.000Z'),
        row(7, null, '000125', '10.00', 'BRL', '2024-01-01T02:59:59.000Z'),
        row(8, 'PED-004', null, '12000000.01', 'BRL', '2024-02-29T15:00:00.000Z'),
        rejected(
          9,
          'DATA',
          '"31/02/2024 10:00:00" is not a valid date-time: day of month 31 does not exist',
          ids('PED-005', '000126'),
        ),
        rejected(
          10,
          'VALOR',
          '"1.23,4" is not a valid amount: misplaced thousands separator (digits must be grouped by three)',
          ids('PED-006', '000127'),
        ),
      ]);
    });

    it('rejects rows whose bytes are not UTF-8 when the same file is declared UTF-8', async () => {
      const file = write(Buffer.from(text, 'latin1'));
      const items = await readAll(file, source(file, 'utf8'), 'America/Sao_Paulo');
      expect(items[0]).to.deep.equal(
        // A garbled reference could be anyone's: the rejection names no intent.
        rejected(5, 'PEDIDO', '"A\uFFFD\uFFFDO-001" contains invalid UTF-8 bytes', NO_IDENTIFIERS),
      );
      expect(items[1]).to.deep.equal(row(6, 'PED-002', '000124', '-0.50', 'BRL', '2024-01-01T03:00:00.000Z'));
      // Garbled bytes in columns that are not read change nothing; rows with readable identifiers carry them.
      expect(items.slice(2)).to.deep.equal([
        row(7, null, '000125', '10.00', 'BRL', '2024-01-01T02:59:59.000Z'),
        row(8, 'PED-004', null, '12000000.01', 'BRL', '2024-02-29T15:00:00.000Z'),
        rejected(
          9,
          'DATA',
          '"31/02/2024 10:00:00" is not a valid date-time: day of month 31 does not exist',
          ids('PED-005', '000126'),
        ),
        rejected(
          10,
          'VALOR',
          '"1.23,4" is not a valid amount: misplaced thousands separator (digits must be grouped by three)',
          ids('PED-006', '000127'),
        ),
      ]);
    });
  });

  describe('encodings', () => {
    it('decodes windows-1252 specific bytes (0x80 is the euro sign) and rejects bytes it does not define', async () => {
      const bytes = Buffer.concat([
        Buffer.from(`${HEADER}\n`, 'latin1'),
        Buffer.from([0x80]),
        Buffer.from('-1,', 'latin1'),
        Buffer.from([0x93]),
        Buffer.from('quoted', 'latin1'),
        Buffer.from([0x94]),
        Buffer.from(`,10.00,EUR,${AT}\n`, 'latin1'),
        Buffer.from('R', 'latin1'),
        Buffer.from([0x81]),
        Buffer.from(`,N2,1.00,EUR,${AT}\n`, 'latin1'),
      ]);
      const file = write(bytes);
      expect(await readAll(file, config(file, { encoding: 'windows-1252' }))).to.deep.equal([
        row(2, '€-1', '\u201cquoted\u201d', '10.00', 'EUR', AT_ISO),
        rejected(3, 'reference', '"R\uFFFD" contains invalid windows-1252 bytes', NO_IDENTIFIERS),
      ]);
      // The same bytes read as latin1 are C1 control characters: the declared encoding matters.
      expect(await readAll(file, config(file, { encoding: 'latin1' }))).to.deep.equal([
        row(2, '\u0080-1', '\u0093quoted\u0094', '10.00', 'EUR', AT_ISO),
        row(3, 'R\u0081', 'N2', '1.00', 'EUR', AT_ISO),
      ]);
    });

    const body = `${HEADER}\nAção-1,"日本, 🚀",1.00,brl,${AT}\n`;
    const expected = [row(2, 'Ação-1', '日本, 🚀', '1.00', 'BRL', AT_ISO)];

    it('reads UTF-8 without a byte order mark', async () => {
      const file = write(Buffer.from(body, 'utf8'));
      expect(await readAll(file, config(file))).to.deep.equal(expected);
    });

    it('reads UTF-8 with a byte order mark (the first header name still matches)', async () => {
      const file = write(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body, 'utf8')]));
      expect(await readAll(file, config(file))).to.deep.equal(expected);
    });

    it('skips lines after a byte order mark', async () => {
      const file = write(
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`Título\n${body}`, 'utf8')]),
      );
      expect(await readAll(file, config(file, { skipLines: 1 }))).to.deep.equal([
        row(3, 'Ação-1', '日本, 🚀', '1.00', 'BRL', AT_ISO),
      ]);
    });

    it('rejects a row with invalid UTF-8 bytes in a mapped column', async () => {
      const bytes = Buffer.concat([
        Buffer.from(`${HEADER},note\n`),
        Buffer.from([0x53, 0xc3, 0x28, 0x6f]), // "S", a lead byte without its continuation, "(o"
        Buffer.from(`,N1,1.00,BRL,${AT},ok\n`),
        Buffer.from(`A2,N2,2.00,BRL,${AT},`),
        Buffer.from([0xff]), // garbage in a column we do not read is not our business
        Buffer.from('\n'),
      ]);
      const file = write(bytes);
      expect(await readAll(file, config(file))).to.deep.equal([
        rejected(2, 'reference', '"S\uFFFD(o" contains invalid UTF-8 bytes', NO_IDENTIFIERS),
        row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
      ]);
    });
  });

  describe('quoting, line endings and line numbers', () => {
    const endings: Array<[string, string]> = [
      ['LF', '\n'],
      ['CRLF', '\r\n'],
      ['CR only', '\r'],
    ];
    for (const [name, eol] of endings) {
      it(`reports physical start lines with ${name} endings, also after quoted newlines`, async () => {
        const lines = [
          HEADER, // 1
          `"A,1",N1,1.00,BRL,${AT}`, // 2: delimiter inside quotes
          '"multi', // 3: a record over three lines
          'line',
          `ref",N2,2.00,BRL,${AT}`,
          `A3,N3,3.00,BRL,${AT}`, // 6
          `"say ""hi""","N4${eol}x",4.00,BRL,${AT}`, // 7: escaped quotes, and another newline
          `"",N5,5.00,BRL,${AT}`, // 9: empty quoted reference
          'A6,N6,6.00,BRL,bad-date', // 10
        ];
        const file = write(lines.join(eol) + eol);
        expect(await readAll(file, config(file))).to.deep.equal([
          row(2, 'A,1', 'N1', '1.00', 'BRL', AT_ISO),
          row(3, `multi${eol}line${eol}ref`, 'N2', '2.00', 'BRL', AT_ISO),
          row(6, 'A3', 'N3', '3.00', 'BRL', AT_ISO),
          row(7, 'say "hi"', `N4${eol}x`, '4.00', 'BRL', AT_ISO),
          row(9, null, 'N5', '5.00', 'BRL', AT_ISO),
          rejected(
            10,
            'executed_at',
            '"bad-date" is not a valid date-time: not an ISO 8601 date-time (like 2024-03-15T14:30:00)',
            ids('A6', 'N6'),
          ),
        ]);
      });
    }

    // The last record of a file that does not end with a line break may be cut anywhere (a transfer in
    // progress): it is rejected, with what identifiers it shows, unless the source says its partner omits it.
    for (const [name, q] of [
      ['the fast path', ''],
      ['csv-parse', '"'],
    ]) {
      it(`rejects the last record when the file does not end with a line break (${name})`, async () => {
        const file = write(`${HEADER}\r\n${q}A1${q},N1,1.00,BRL,${AT}\r\nA2,N2,2.00,BRL,${AT}`);
        expect(await readAll(file, config(file))).to.deep.equal([
          row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
          unterminated(3, 3, ids('A2', 'N2')),
        ]);
        expect(await readAll(file, config(file, { finalLineBreak: false }))).to.deep.equal([
          row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
          row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
        ]);
      });

      it(`names nobody for a last record cut before its last field (${name})`, async () => {
        const file = write(`${HEADER}\n${q}A1${q},N1,1.00,BRL,${AT}\nA2,N2,2.0`);
        expect(await readAll(file, config(file))).to.deep.equal([
          row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
          unterminated(3, 3, NO_IDENTIFIERS),
        ]);
      });
    }

    it('skips preamble lines with CR-only endings, whatever they contain', async () => {
      const file = write(`Report "March, 2024\rperiod: 1-31\r${HEADER}\rA1,N1,1.00,BRL,${AT}\r`);
      expect(await readAll(file, config(file, { skipLines: 2 }))).to.deep.equal([
        row(4, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
      ]);
    });

    it('skips a CRLF preamble line whose CR and LF fall in different read chunks', async () => {
      // createReadStream reads 64 KiB chunks: the CR is the last byte of the first chunk.
      const title = 'x'.repeat(64 * 1024 - 1);
      const file = write(`${title}\r\n${HEADER}\r\nA1,N1,1.00,BRL,${AT}\r\n`);
      expect(await readAll(file, config(file, { skipLines: 1 }))).to.deep.equal([
        row(3, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
      ]);
    });

    it('trims unquoted values, and quoted identifiers too (blanks are never part of an id)', async () => {
      const file = write(
        `${HEADER}\n  A1  , N1\t, 1.00 , brl , ${AT} \n"  A2  ", "N2" ," 2.00 ",BRL,"${AT}"\n`,
      );
      expect(await readAll(file, config(file))).to.deep.equal([
        row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
        row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
      ]);
    });

    it('rejects an identifier a spreadsheet wrote in scientific notation, naming nobody', async () => {
      const file = write(`${HEADER}\n"1.23457E+19",N1,1.00,BRL,${AT}\nA2,8.815E+15,2.00,BRL,${AT}\n`);
      const reason = (value: string) =>
        `"${value}" is a number in scientific notation (a spreadsheet rewrote the id and lost its digits): it names nobody we can find`;
      expect(await readAll(file, config(file))).to.deep.equal([
        rejected(2, 'reference', reason('1.23457E+19'), NO_IDENTIFIERS),
        rejected(3, 'partner_ref', reason('8.815E+15'), NO_IDENTIFIERS),
      ]);
    });

    it('uses the configured quote character, escaped by doubling', async () => {
      const file = write(`${HEADER}\n'O''Brien, Ltd','say "hi"',1.00,BRL,${AT}\n`);
      expect(await readAll(file, config(file, { quote: "'" }))).to.deep.equal([
        row(2, "O'Brien, Ltd", 'say "hi"', '1.00', 'BRL', AT_ISO),
      ]);
    });

    it('keeps formula-like strings verbatim: they are data here', async () => {
      const file = write(
        `${HEADER}\n=1+1,@SUM(A1:A2),1.00,BRL,${AT}\n"+cmd|' /C calc'!A0",-2+3,2.00,BRL,${AT}\n`,
      );
      expect(await readAll(file, config(file))).to.deep.equal([
        row(2, '=1+1', '@SUM(A1:A2)', '1.00', 'BRL', AT_ISO),
        row(3, "+cmd|' /C calc'!A0", '-2+3', '2.00', 'BRL', AT_ISO),
      ]);
    });
  });

  describe('mixed line endings', () => {
    // Every CRLF, LF and CR outside quotes ends a record, whatever the first line ended with. A file without
    // a quote character is split by the fast path; a quote in the first chunk (`q` around A1 here) sends
    // the whole file through csv-parse. Both must give the same items.
    const paths: Array<[string, string]> = [
      ['the fast path', ''],
      ['csv-parse', '"'],
    ];
    /** Each item as its line and, for a rejection, its field and reason. */
    const located = (items: ReportItem[]): string[] =>
      items.map((item) =>
        item.kind === 'row'
          ? `${item.row.line}: ${item.row.reference}`
          : item.kind === 'rejected'
            ? `${item.rejected.line}: ${item.rejected.field}: ${item.rejected.reason}`
            : `${item.coverage.line}: declaration`,
      );

    for (const [name, q] of paths) {
      it(`ends a record at each CRLF, LF and CR in one file (${name})`, async () => {
        const file = write(
          [
            `${HEADER}\r\n`, // 1
            `${q}A1${q},N1,1.00,BRL,${AT}\r\n`, // 2
            `A2,N2,2.00,BRL,${AT}\n`, // 3
            `A3,N3,3.00,BRL,${AT}\r`, // 4
            `A4,N4,4.00,BRL,${AT}\r\n`, // 5
            '\n', // 6: blank
            '\r', // 7: blank (an LF then a CR are two line ends)
            `A5,N5,5.00,BRL,${AT}\n`, // 8
            '\r\n', // 9: blank
            `A6,N6,6.00,BRL,${AT}`, // 10: no line end
          ].join(''),
        );
        expect(await readAll(file, config(file))).to.deep.equal([
          row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
          row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
          row(4, 'A3', 'N3', '3.00', 'BRL', AT_ISO),
          row(5, 'A4', 'N4', '4.00', 'BRL', AT_ISO),
          row(8, 'A5', 'N5', '5.00', 'BRL', AT_ISO),
          unterminated(10, 10, ids('A6', 'N6')),
        ]);
      });

      it(`reports rejected rows on their physical lines after mixed line endings (${name})`, async () => {
        const file = write(
          [
            `${HEADER}\n`, // 1
            `${q}A1${q},N1,1.00,BRL,${AT}\r`, // 2
            `A2,N2,abc,BRL,${AT}\r\n`, // 3
            'A3,N3,3.00,BRL\n', // 4: a field short
            '\r', // 5: blank
            `A4,N4,4.00,BRL,${AT},extra\r`, // 6: a field too many
            `A5,N5,5.00,R$,${AT}\n`, // 7
          ].join(''),
        );
        expect(located(await readAll(file, config(file)))).to.deep.equal([
          '2: A1',
          '3: amount: "abc" is not a valid amount: unexpected character "a"',
          '4: *: expected 5 fields as in the header, found 4',
          '6: *: expected 5 fields as in the header, found 6',
          '7: currency: "R$" is not a 3-letter ISO 4217 currency code',
        ]);
      });

      it(`skips preamble lines with mixed line endings (${name})`, async () => {
        const preamble = 'Report "March, 2024\r\nperiod: 1-31\ngenerated by "X"\r';
        const file = write(`${preamble}${HEADER}\r${q}A1${q},N1,1.00,BRL,${AT}\nA2,N2,2.00,BRL,${AT}\r\n`);
        expect(await readAll(file, config(file, { skipLines: 3 }))).to.deep.equal([
          row(5, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
          row(6, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
        ]);
      });

      for (const [ending, eol] of [
        ['a CRLF', '\r\n'],
        ['a lone CR', '\r'],
      ]) {
        it(`reads ${ending} whose CR ends a read chunk as one line end (${name})`, async () => {
          // createReadStream reads 64 KiB chunks: the CR ending line 2 is the last byte of the first one.
          // csv-parse gets the same chunks, and here a closing quote right before the CR.
          const head = `${HEADER},note\n${q}A1${q},N1,1.00,BRL,${AT},${q}`;
          const text = `${head}${'x'.repeat(64 * 1024 - 1 - head.length - q.length)}${q}${eol}A2,N2,2.00,BRL,${AT},y\rA3,N3,3.00,BRL,${AT},z\n`;
          expect(text.indexOf(`${eol}A2`)).to.equal(64 * 1024 - 1);
          const file = write(text);
          expect(await readAll(file, config(file))).to.deep.equal([
            row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
            row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
            row(4, 'A3', 'N3', '3.00', 'BRL', AT_ISO),
          ]);
        });
      }
    }

    it('keeps CR, LF and CRLF inside a quoted field verbatim and counts each as a line', async () => {
      const file = write(
        [
          `${HEADER}\n`, // 1
          `"a\rb\nc\r\nd",N1,1.00,BRL,${AT}\r\n`, // 2-5
          `A2,"N\n2",2.00,BRL,${AT}\r`, // 6-7
          `A3,N3,3.00,BRL,${AT}\n`, // 8
          `"x\r\n\r\n",N4,4.00,BRL,${AT}\r`, // 9-11
          `A5,N5,5.00,BRL,${AT}`, // 12
        ].join(''),
      );
      expect(await readAll(file, config(file))).to.deep.equal([
        row(2, 'a\rb\nc\r\nd', 'N1', '1.00', 'BRL', AT_ISO),
        row(6, 'A2', 'N\n2', '2.00', 'BRL', AT_ISO),
        row(8, 'A3', 'N3', '3.00', 'BRL', AT_ISO),
        // Line breaks around an identifier are whitespace around it: trimmed (src/shared/identifierText.ts).
        row(9, 'x', 'N4', '4.00', 'BRL', AT_ISO),
        unterminated(12, 12, ids('A5', 'N5')),
      ]);
    });

    it('keeps ending records at every line end after switching to csv-parse mid-file', async () => {
      // Thousands of fast-path rows over several read chunks, a quoted row, then csv-parse to the end; the
      // line ends cycle through LF, CRLF and CR, so chunks are cut at every kind (and inside CRLFs).
      const eols = ['\n', '\r\n', '\r'];
      let text = `${HEADER}\r`;
      for (let i = 1; i <= 6000; i++) {
        const reference = i === 3000 ? '"quoted, with a comma"' : `A${i}`;
        text += `${reference},N${i},1.00,BRL,${AT}${eols[i % 3]}`;
      }
      const file = write(text);
      const items = await readAll(file, config(file));
      expect(items).to.have.length(6000);
      expect(items.every((item, i) => item.kind === 'row' && item.row.line === i + 2)).to.equal(true);
      expect([items[2998], items[2999], items[3000], items[5999]]).to.deep.equal([
        row(3000, 'A2999', 'N2999', '1.00', 'BRL', AT_ISO),
        row(3001, 'quoted, with a comma', 'N3000', '1.00', 'BRL', AT_ISO),
        row(3002, 'A3001', 'N3001', '1.00', 'BRL', AT_ISO),
        row(6001, 'A6000', 'N6000', '1.00', 'BRL', AT_ISO),
      ]);
    });
  });

  describe('header', () => {
    it('ignores extra columns and finds mapped ones in any order', async () => {
      const file = write(
        `extra1;executed_at;extra2;amount;partner_ref;currency;reference;extra3\n` +
          `x;${AT};y;-12.30;N1;usd;A1;z\n`,
      );
      expect(await readAll(file, config(file, { delimiter: ';' }))).to.deep.equal([
        row(2, 'A1', 'N1', '-12.30', 'USD', AT_ISO),
      ]);
    });

    it('names the file, the missing column and the columns found', async () => {
      const file = write('PEDIDO,VALOR\nA1,1.00\n');
      const error = await formatError(
        file,
        config(file, { columns: { reference: 'PEDIDO', partnerReference: 'NSU', amount: 'VALOR' } }),
      );
      expect(error.name).to.equal('ReportFormatError');
      expect(error.message).to.equal(
        `${file}: column "NSU" (partnerReference) not found in header; found: PEDIDO, VALOR`,
      );
      expect(error.file).to.equal(file);
      expect(error.line).to.equal(1);
      expect(error.field).to.equal('NSU');
    });

    it('lists every missing column, with the header line after skipped lines', async () => {
      const file = write('title\n\nPEDIDO,VALOR\nA1,1.00\n');
      const error = await formatError(
        file,
        config(file, {
          skipLines: 2,
          columns: { reference: 'PEDIDO', partnerReference: 'NSU', amount: 'VALOR', executedAt: 'DATA' },
        }),
      );
      expect(error.message).to.equal(
        `${file}: columns "NSU" (partnerReference), "DATA" (executedAt) not found in header; found: PEDIDO, VALOR`,
      );
      expect(error.line).to.equal(3);
      expect(error.field).to.equal('NSU, DATA');
    });

    it('refuses a mapped column that appears twice, but not a duplicated unmapped one', async () => {
      const columns = { reference: 'PEDIDO', amount: 'VALOR' };
      const duplicated = write('PEDIDO,VALOR,VALOR\nA1,1.00,2.00\n');
      const error = await formatError(duplicated, config(duplicated, { columns }));
      expect(error.message).to.equal(
        `${duplicated}: column "VALOR" (amount) appears 2 times in header; found: PEDIDO, VALOR, VALOR`,
      );
      expect(error.field).to.equal('VALOR');

      const harmless = write('PEDIDO,X,X,VALOR\nA1,a,b,1.00\n');
      expect(await readAll(harmless, config(harmless, { columns }))).to.deep.equal([
        row(2, 'A1', null, '1.00', null, null),
      ]);
    });

    it('says "file is empty" for an empty file and for a file holding only a byte order mark', async () => {
      for (const content of [Buffer.alloc(0), Buffer.from([0xef, 0xbb, 0xbf])]) {
        const file = write(content);
        const error = await formatError(file, config(file));
        expect(error.message).to.equal(`${file}: file is empty`);
        expect(error.line).to.equal(undefined);
      }
    });

    it('says where the header was expected when the file ends within the skipped lines', async () => {
      const file = write('title\nperiod\n');
      const error = await formatError(file, config(file, { skipLines: 3 }));
      expect(error.message).to.equal(`${file}: file is empty after skipping 3 line(s): no header on line 4`);
    });

    it('refuses a blank header line', async () => {
      const file = write(`title\n\n${HEADER}\n`);
      const error = await formatError(file, config(file, { skipLines: 1 }));
      expect(error.message).to.equal(`${file}: header line 2 is empty (is skipLines = 1 right?)`);
      expect(error.line).to.equal(2);
    });

    it('yields nothing for a header without rows', async () => {
      const file = write(`${HEADER}\n`);
      expect(await readAll(file, config(file))).to.deep.equal([]);
    });
  });

  describe('rows', () => {
    it('rejects every kind of bad amount with the column name and the value', async () => {
      const cases: Array<[string, string]> = [
        ['', '"" is not a valid amount: empty'],
        ['1.2.3', '"1.2.3" is not a valid amount: more than one decimal separator'],
        ['--5', '"--5" is not a valid amount: more than one sign'],
        ['1e5', '"1e5" is not a valid amount: exponent notation (like 1e5) is not accepted'],
        ['NaN', '"NaN" is not a valid amount: NaN is not a number'],
        ['Infinity', '"Infinity" is not a valid amount: Infinity is not a number'],
        ['12abc', '"12abc" is not a valid amount: unexpected character "a"'],
        [
          '1,23,456',
          '"1,23,456" is not a valid amount: misplaced thousands separator (digits must be grouped by three)',
        ],
        [
          '123456789012345678901',
          '"123456789012345678901" is not a valid amount: too many digits: 21 before the decimal separator (at most 20)',
        ],
        [
          '1.12345678901',
          '"1.12345678901" is not a valid amount: too many digits: 11 after the decimal separator (at most 10)',
        ],
        ['x'.repeat(50), `"${'x'.repeat(40)}…" is not a valid amount: unexpected character "x"`],
      ];
      const good = ['1,234.50', '  -7.5  ', '" 8.25 "'];
      const lines = [
        'ref;amt',
        ...cases.map(([amount], i) => `R${i};${amount}`),
        ...good.map((a, i) => `G${i};${a}`),
      ];
      const file = write(`${lines.join('\n')}\n`);
      const source = config(file, {
        delimiter: ';',
        thousandsSeparator: ',',
        columns: { reference: 'ref', amount: 'amt' },
      });
      expect(await readAll(file, source)).to.deep.equal([
        // No partner reference column is mapped: the record has none.
        ...cases.map(([, reason], i) => rejected(i + 2, 'amt', reason, ids(`R${i}`, null))),
        row(cases.length + 2, 'G0', null, '1234.50', null, null),
        row(cases.length + 3, 'G1', null, '-7.5', null, null),
        row(cases.length + 4, 'G2', null, '8.25', null, null),
      ]);
    });

    it('rejects an impossible date and a local time skipped by daylight saving', async () => {
      const file = write(
        'PEDIDO;DATA\nA1;31/02/2024 10:00:00\nA2;04/11/2018 00:30:00\nA3;04/11/2018 01:30:00\n',
      );
      const source = config(file, {
        delimiter: ';',
        dateFormat: 'dd/MM/yyyy HH:mm:ss',
        columns: { reference: 'PEDIDO', executedAt: 'DATA' },
      });
      expect(await readAll(file, source, 'America/Sao_Paulo')).to.deep.equal([
        rejected(
          2,
          'DATA',
          '"31/02/2024 10:00:00" is not a valid date-time: day of month 31 does not exist',
          ids('A1', null),
        ),
        rejected(
          3,
          'DATA',
          '"04/11/2018 00:30:00" is not a valid date-time: local time 2018-11-04 00:30:00 does not exist in America/Sao_Paulo (daylight saving gap)',
          ids('A2', null),
        ),
        row(4, 'A3', null, null, null, '2018-11-04T03:30:00.000Z'),
      ]);
    });

    it('reads ISO times without an offset in the given zone', async () => {
      const file = write(`${HEADER}\nA1,N1,1.00,BRL,2024-03-15T14:30:00\n`);
      expect(await readAll(file, config(file), 'America/Sao_Paulo')).to.deep.equal([
        row(2, 'A1', 'N1', '1.00', 'BRL', '2024-03-15T17:30:00.000Z'),
      ]);
    });

    it('upper-cases currency codes and rejects anything but three letters', async () => {
      const file = write(
        `${HEADER}\nA1,N1,1.00,brl,${AT}\nA2,N2,1.00, usd ,${AT}\nA3,N3,1.00,R$,${AT}\n` +
          `A4,N4,1.00,EURO,${AT}\nA5,N5,1.00,,${AT}\n`,
      );
      expect(await readAll(file, config(file))).to.deep.equal([
        row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
        row(3, 'A2', 'N2', '1.00', 'USD', AT_ISO),
        rejected(4, 'currency', '"R$" is not a 3-letter ISO 4217 currency code', ids('A3', 'N3')),
        rejected(5, 'currency', '"EURO" is not a 3-letter ISO 4217 currency code', ids('A4', 'N4')),
        rejected(6, 'currency', '"" is not a 3-letter ISO 4217 currency code', ids('A5', 'N5')),
      ]);
    });

    it('applies a constant currency to every row', async () => {
      const file = write('ref,amt\nA1,1.00\nA2,2.00\n');
      const source = config(file, {
        columns: { reference: 'ref', amount: 'amt', currency: { value: 'usd' } },
      });
      expect(await readAll(file, source)).to.deep.equal([
        row(2, 'A1', null, '1.00', 'USD', null),
        row(3, 'A2', null, '2.00', 'USD', null),
      ]);
    });

    it('yields rows and rejections in file order, skipping only truly empty lines', async () => {
      const lines = [
        HEADER, // 1
        `A1,N1,1.00,BRL,${AT}`, // 2
        `A2,N2,abc,BRL,${AT}`, // 3
        'A3,N3,3.00,BRL', // 4: a field short
        '', // 5: blank, skipped
        `A4,N4,4.00,BRL,${AT},extra`, // 6: a field too many
        '   ', // 7: spaces are not nothing
        `,,5.00,BRL,${AT}`, // 8
        ',,,,', // 9: all cells empty, but the partner wrote them
        '""', // 10: a quoted empty field is not a blank line
        `A5,N5,5.00,BRL,${AT}`, // 11
        '', // 12
        '', // 13
      ];
      const file = write(`${lines.join('\n')}\n`);
      const items = await readAll(file, config(file));
      expect(items).to.deep.equal([
        row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO),
        rejected(3, 'amount', '"abc" is not a valid amount: unexpected character "a"', ids('A2', 'N2')),
        // A row of the wrong width could put any cell under any column: it names no intent.
        rejected(4, '*', 'expected 5 fields as in the header, found 4', NO_IDENTIFIERS),
        rejected(6, '*', 'expected 5 fields as in the header, found 6', NO_IDENTIFIERS),
        rejected(7, '*', 'expected 5 fields as in the header, found 1', NO_IDENTIFIERS),
        // Read, and there are none.
        rejected(8, 'reference', 'no reference and no partner reference', ids(null, null)),
        rejected(9, 'reference', 'no reference and no partner reference', ids(null, null)),
        rejected(10, '*', 'expected 5 fields as in the header, found 1', NO_IDENTIFIERS),
        row(11, 'A5', 'N5', '5.00', 'BRL', AT_ISO),
      ]);
      expect(items.filter((item) => item.kind === 'rejected')).to.have.length(7);
    });

    it('names the partner reference column when it is the only reference mapped', async () => {
      const file = write('NSU;VALOR\n;1,00\n123;2,00\n');
      const source = config(file, {
        delimiter: ';',
        decimalSeparator: ',',
        columns: { partnerReference: 'NSU', amount: 'VALOR' },
      });
      expect(await readAll(file, source)).to.deep.equal([
        rejected(2, 'NSU', 'no reference and no partner reference', ids(null, null)),
        row(3, null, '123', '2.00', null, null),
      ]);
    });

    it('rejects a NUL byte in a mapped column and ignores one elsewhere', async () => {
      const file = write(
        `${HEADER},note\nA\u0000B,N1,1.00,BRL,${AT},ok\nA2,N2,2.00,BRL,${AT},x\u0000y\n` +
          `A3,N3,3\u00000,BRL,${AT},ok\n`,
      );
      expect(await readAll(file, config(file))).to.deep.equal([
        // A garbled identifier could be anyone's; a garbled amount still leaves the identifiers readable.
        rejected(2, 'reference', '"A\\u0000B" contains a NUL byte', NO_IDENTIFIERS),
        row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
        rejected(4, 'amount', '"3\\u00000" contains a NUL byte', ids('A3', 'N3')),
      ]);
    });

    it('rejects a field larger than 1 MB and goes on with the next row', async () => {
      const huge = `R${'x'.repeat(MAX_FIELD_CHARS)}`;
      const file = write(`${HEADER}\n${huge},N1,1.00,BRL,${AT}\nA2,N2,2.00,BRL,${AT}\n`);
      expect(await readAll(file, config(file))).to.deep.equal([
        rejected(
          2,
          'reference',
          `value of 1048577 characters is larger than 1 MB: "R${'x'.repeat(39)}…"`,
          NO_IDENTIFIERS,
        ),
        row(3, 'A2', 'N2', '2.00', 'BRL', AT_ISO),
      ]);
    });
  });

  describe('unreadable files', () => {
    it('stops at an unterminated quote, naming the line where its record starts', async () => {
      const file = write(
        `${HEADER}\nA1,N1,1.00,BRL,${AT}\n"A2,N2,2.00,BRL,${AT}\nA3,N3,3.00,BRL,${AT}\nA4,N4,4.00,BRL,${AT}\n`,
      );
      const { items, error } = await readUntilError(file, config(file));
      // What came before the broken record may be cut short, but never reordered or made up.
      expect(items).to.deep.equal([row(2, 'A1', 'N1', '1.00', 'BRL', AT_ISO)].slice(0, items.length));
      expect(error).to.be.instanceOf(ReportFormatError);
      expect(error.message).to.equal(
        `${file}: line 3: unterminated quote: a quoted field in the record starting on this line is never closed`,
      );
      expect((error as ReportFormatError).line).to.equal(3);
    });

    it('stops at text after a closing quote, naming the physical line inside a multi-line record', async () => {
      const file = write(`${HEADER}\r\nA1,N1,1.00,BRL,${AT}\r\n"multi\r\nline"x,N2,2.00,BRL,${AT}\r\n`);
      const { error } = await readUntilError(file, config(file));
      expect(error.message).to.equal(
        `${file}: line 4: unexpected text after a closing quote (a quote inside a quoted field must be doubled)`,
      );
      expect((error as ReportFormatError).line).to.equal(4);
    });

    it('stops at a quote inside an unquoted field', async () => {
      const file = write(`${HEADER}\nA1,N"1",1.00,BRL,${AT}\n`);
      const error = await formatError(file, config(file));
      expect(error.message).to.equal(
        `${file}: line 2: quote inside an unquoted field (such a field must be quoted and its quotes doubled)`,
      );
    });

    it('stops at a record larger than 8 MB instead of buffering it', async () => {
      const file = write(
        `${HEADER}\nA1,N1,1.00,BRL,${AT}\nA2,${'x'.repeat(9 * 1024 * 1024)},2.00,BRL,${AT}\n`,
      );
      const { error } = await readUntilError(file, config(file));
      expect(error.message).to.equal(
        `${file}: line 3: record is larger than 8 MB; is the delimiter right, or is a quote left open?`,
      );
    });

    it('passes a missing file through as the file system error', async () => {
      const file = path.join(dir, 'does-not-exist.csv');
      const { error } = await readUntilError(file, config(file));
      expect(error).not.to.be.instanceOf(ReportFormatError);
      expect((error as NodeJS.ErrnoException).code).to.equal('ENOENT');
    });

    it('refuses a config that cannot work before touching the file', async () => {
      const file = path.join(dir, 'never-read.csv');
      const sameSeparators = await readUntilError(
        file,
        config(file, { delimiter: ';', decimalSeparator: ',', thousandsSeparator: ',' }),
      );
      expect(sameSeparators.error.message).to.equal(
        `invalid CSV source config for ${file}: thousandsSeparator and decimalSeparator are both ","`,
      );
      // A separator that is also the delimiter would split every amount in two.
      const separatorIsDelimiter = await readUntilError(
        file,
        config(file, { delimiter: ';', decimalSeparator: ';' }),
      );
      expect(separatorIsDelimiter.error.message).to.equal(
        `invalid CSV source config for ${file}: decimalSeparator and delimiter are both ";"`,
      );
      const noReference = await readUntilError(file, config(file, { columns: { amount: 'VALOR' } }));
      expect(noReference.error.message).to.equal(
        `invalid CSV source config for ${file}: columns must map reference or partnerReference, or rows cannot be matched to intents`,
      );
      const badCurrency = await readUntilError(
        file,
        config(file, { columns: { reference: 'R', currency: { value: 'R$' } } }),
      );
      expect(badCurrency.error.message).to.equal(
        `invalid CSV source config for ${file}: columns.currency.value must be a 3-letter ISO 4217 code, got "R$"`,
      );
      const badZone = await readUntilError(file, config(file), 'Nowhere/City');
      expect(badZone.error.message).to.equal(`unknown time zone "Nowhere/City" for reading ${file}`);
    });
  });

  describe('fast path and csv-parse agree', () => {
    // Text without a quote character is split by the reader itself; a quote anywhere in a chunk (here, in the
    // header of these small files) sends the rest of the file through csv-parse. The same records behind a
    // quoted and an unquoted header must give the same items (or the same error), whatever the line endings
    // (mixed ones too: cells may hold CRs and LFs), delimiters and blanks.
    const AT_TEXT = '2024-03-15T10:00:00Z';
    const cell = fc.oneof(
      fc.constantFrom(
        'A1',
        ' A2 ',
        '',
        '1.00',
        ' 2.50\t',
        '1,5',
        'BRL',
        'usd',
        ' ',
        AT_TEXT,
        ` ${AT_TEXT}`,
        'x"y',
      ),
      fc
        .array(
          fc.constantFrom('a', '1', ' ', '\t', '\u00a0', '\u3000', '.', ',', ';', '|', '\r', '\n', '"', 'é'),
          {
            maxLength: 6,
          },
        )
        .map((chars) => chars.join('')),
    );
    const layout = fc.record({
      eol: fc.constantFrom('\n', '\r\n', '\r'),
      delimiter: fc.constantFrom(',', ';', '\t', '||'),
      skipLines: fc.integer({ min: 0, max: 2 }),
      rows: fc.array(fc.array(cell, { maxLength: 7 }), { maxLength: 25 }),
      endsWithEol: fc.boolean(),
    });
    const names = ['reference', 'partner_ref', 'amount', 'currency', 'executed_at'];

    async function outcome(file: string, source: CsvSourceConfig) {
      try {
        return { items: await readAll(file, source) };
      } catch (error) {
        const { message, line } = error as ReportFormatError;
        return { error: message.replace(file, 'FILE'), line };
      }
    }

    it('for random records', async () => {
      await fc.assert(
        fc.asyncProperty(layout, async ({ eol, delimiter, skipLines, rows, endsWithEol }) => {
          const preamble = Array.from({ length: skipLines }, (_, i) => `title "${i}`);
          const body = rows.map((cells) => cells.join(delimiter));
          const text = (header: string) =>
            [...preamble, header, ...body].join(eol) + (endsWithEol ? eol : '');
          const fast = write(text(names.join(delimiter)));
          const slow = write(text(['"reference"', ...names.slice(1)].join(delimiter)));
          const source = (file: string) => config(file, { delimiter, skipLines });
          const [a, b] = [await outcome(fast, source(fast)), await outcome(slow, source(slow))];
          expect(a).to.deep.equal(b);
        }),
        {
          numRuns: 400,
          examples: [
            // A last line of blanks without a line break is no record; one with a delimiter is.
            [{ eol: '\n', delimiter: ',', skipLines: 0, rows: [['A1'], [' \t']], endsWithEol: false }],
            [{ eol: '\r\n', delimiter: ';', skipLines: 1, rows: [['A1'], [' ', '']], endsWithEol: false }],
            // A line break of another kind than `eol` ends a record too; a CR then an LF is one line end.
            [
              {
                eol: '\n',
                delimiter: ',',
                skipLines: 0,
                rows: [['\r'], ['A\rB', ' x\r']],
                endsWithEol: true,
              },
            ],
            [{ eol: '\r', delimiter: '||', skipLines: 2, rows: [['\nA1'], ['a\n']], endsWithEol: true }],
          ],
        },
      );
    });

    it('switches to csv-parse at the first chunk with a quote and keeps counting lines', async () => {
      const rows = [HEADER];
      for (let i = 1; i <= 3000; i++) rows.push(`A${i},N${i},1.00,BRL,${AT}`);
      rows.push(`"quoted, with a comma",N-Q,2.00,BRL,${AT}`);
      rows.push(`"multi\r\nline",N-M,3.00,BRL,${AT}`);
      rows.push(`A-last,N-last,4.00,BRL,${AT}`);
      const file = write(`${rows.join('\r\n')}\r\n`);
      const items = await readAll(file, config(file));
      expect(items).to.have.length(3003);
      expect(items[2999]).to.deep.equal(row(3001, 'A3000', 'N3000', '1.00', 'BRL', AT_ISO));
      expect(items.slice(3000)).to.deep.equal([
        row(3002, 'quoted, with a comma', 'N-Q', '2.00', 'BRL', AT_ISO),
        row(3003, 'multi\r\nline', 'N-M', '3.00', 'BRL', AT_ISO),
        row(3005, 'A-last', 'N-last', '4.00', 'BRL', AT_ISO),
      ]);
    });
  });

  describe('scale', function () {
    // A memory guard, not a speed test: on a loaded machine reading 200k rows may take well over 30 s.
    this.timeout(300_000);
    const ROWS = 200_000;
    let bigFile: string;

    before(() => {
      bigFile = path.join(dir, 'big.csv');
      const fd = fs.openSync(bigFile, 'w');
      try {
        fs.writeSync(fd, 'PEDIDO;NSU;VALOR;DATA;DESCRIÇÃO\n');
        let chunk = '';
        for (let i = 1; i <= ROWS; i++) {
          chunk += `${bigReference(i)};${String(i).padStart(12, '0')};${bigAmountText(i)};15/03/2024 14:30:00;"descrição ${i}; com ponto e vírgula"\n`;
          if (i % 10_000 === 0) {
            fs.writeSync(fd, chunk);
            chunk = '';
          }
        }
        fs.writeSync(fd, chunk);
      } finally {
        fs.closeSync(fd);
      }
    });

    const source = (file: string): CsvSourceConfig => ({
      type: 'csv',
      path: file,
      delimiter: ';',
      decimalSeparator: ',',
      thousandsSeparator: '.',
      dateFormat: 'dd/MM/yyyy HH:mm:ss',
      columns: {
        reference: 'PEDIDO',
        partnerReference: 'NSU',
        amount: 'VALOR',
        currency: { value: 'BRL' },
        executedAt: 'DATA',
      },
    });

    it(`reads ${ROWS} rows exactly while heap use stays flat`, async () => {
      const gc = exposeGc();
      gc();
      const start = process.memoryUsage().heapUsed;
      let peak = 0;
      let count = 0;
      const executedAt = new Date('2024-03-15T17:30:00.000Z').getTime();
      for await (const item of readCsvReport(bigFile, source(bigFile), { timezone: 'America/Sao_Paulo' })) {
        count += 1;
        if (item.kind !== 'row') throw new Error(`row ${count} rejected: ${JSON.stringify(item)}`);
        const { row: partnerRow } = item;
        if (
          partnerRow.line !== count + 1 ||
          partnerRow.reference !== bigReference(count) ||
          partnerRow.partnerReference !== String(count).padStart(12, '0') ||
          partnerRow.amount !== bigAmount(count) ||
          partnerRow.currency !== 'BRL' ||
          partnerRow.executedAt?.getTime() !== executedAt
        ) {
          throw new Error(`row ${count} read wrong: ${JSON.stringify(partnerRow)}`);
        }
        if (count % 20_000 === 0) {
          gc();
          peak = Math.max(peak, process.memoryUsage().heapUsed - start);
        }
      }
      expect(count).to.equal(ROWS);
      expect(peak).to.be.below(60 * 1024 * 1024);
    });

    it('stops reading and closes the file when the consumer stops early', async () => {
      const openFds = () => fs.readdirSync('/proc/self/fd').length;
      const canCount = fs.existsSync('/proc/self/fd');
      const before = canCount ? openFds() : 0;
      const seen: ReportItem[] = [];
      for await (const item of readCsvReport(bigFile, source(bigFile), { timezone: 'America/Sao_Paulo' })) {
        seen.push(item);
        if (seen.length === 2) break;
      }
      expect(seen.map((item) => (item.kind === 'row' ? item.row.line : -1))).to.deep.equal([2, 3]);
      if (canCount) {
        // Closing is asynchronous; give it a few turns of the event loop.
        for (let i = 0; i < 50 && openFds() > before; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        expect(openFds()).to.equal(before);
      }
    });
  });
});

/** Long enough that keeping every row in memory would blow the heap guard. */
function bigReference(i: number): string {
  return `PED-${i}-São Paulo-Ação-Belém-Maceió-${'ç'.repeat(i % 7)}-${'x'.repeat(60)}`;
}

/** `i` cents, written the Brazilian way: 1234567 -> "12.345,67". */
function bigAmountText(i: number): string {
  const integer = String(Math.floor(i / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, '.');
  return `${integer},${String(i % 100).padStart(2, '0')}`;
}

function bigAmount(i: number): string {
  return `${Math.floor(i / 100)}.${String(i % 100).padStart(2, '0')}`;
}

/** Forcing collection makes the heap reading mean "retained", not "not yet collected". */
function exposeGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc: unknown = vm.runInNewContext('gc');
  if (typeof gc !== 'function') throw new Error('could not expose the garbage collector');
  return gc as () => void;
}
