import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { renderHtmlSummary } from '../../src/discrepancies/renderHtmlSummary.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { summaryData } from '../../src/discrepancies/summaryData.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise } from './seed.js';

const TOKEN = 'at-risk-test-token-0123456789abcdef';

/**
 * Acknowledging a discrepancy settles nothing: its money stays "at risk" in the totals, the review page,
 * `/report` and the HTML export, until it is resolved or dismissed.
 */
describe('amount at risk counts every unsettled discrepancy (open and acknowledged)', function () {
  this.timeout(30_000);
  const db = useFreshDatabase('at_risk');
  let sql: Pool;
  let app: FastifyInstance;

  before(async () => {
    sql = sqlPool(db.url);
    const [, acknowledged, resolved, dismissed] = [
      await raise(sql, { amountAtRisk: '100.00', currency: 'BRL' }),
      await raise(sql, { amountAtRisk: '25.50', currency: 'BRL' }),
      await raise(sql, { amountAtRisk: '7000.00', currency: 'BRL' }),
      await raise(sql, { amountAtRisk: '9000.00', currency: 'BRL' }),
    ];
    await reviewDiscrepancies(sql, [acknowledged], 'acknowledge', { note: 'on it', by: 'ana' });
    await reviewDiscrepancies(sql, [resolved], 'resolve', { note: 'refunded', by: 'ana' });
    await reviewDiscrepancies(sql, [dismissed], 'dismiss', { note: 'noise', by: 'ana' });
    app = createReviewServer({ pool: sql, token: TOKEN });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await sql?.end();
  });

  it('summaryData: 125.50 at risk (100.00 open + 25.50 acknowledged), resolved and dismissed left out', async () => {
    const data = await summaryData(sql, {});
    expect(data.atRisk.count).to.equal(2);
    expect(data.atRisk.byCurrency).to.deep.equal([
      {
        currency: 'BRL',
        count: 2,
        amountAtRisk: '125.50',
        withoutAmount: 0,
        acknowledged: { count: 1, amountAtRisk: '25.50' },
      },
    ]);
    expect(data.atRisk.byPartner.map((t) => [t.key, t.amountAtRisk, t.acknowledged.count])).to.deep.equal([
      ['acme-pay', '125.50', 1],
    ]);
    expect(data.atRisk.ageing[0]).to.include({ bucket: '<1d', count: 2 });
  });

  it('the HTML export and /report show 125.50 with the acknowledged part', async () => {
    const exported = renderHtmlSummary(await summaryData(sql, {}));
    const report = await app.inject({
      method: 'GET',
      url: '/report',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(report.statusCode).to.equal(200);
    for (const html of [exported, report.body]) {
      expect(html).to.contain('125.50 <small>BRL</small>');
      expect(html).to.contain('of which 1 acknowledged: 25.50');
      expect(html).to.contain('1 open, 1 acknowledged');
      expect(html).not.to.contain('100.00 <small>BRL</small>');
    }
  });

  it('the review page shows 125.50 at risk, of which 25.50 acknowledged', async () => {
    const page = await app.inject({ method: 'GET', url: '/', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(page.statusCode).to.equal(200);
    const tile = page.body.slice(page.body.indexOf('Amount at risk (open and acknowledged)'));
    expect(tile).to.match(/<strong>[^<]*125[.,]50<\/strong>/);
    expect(tile).to.match(/of which acknowledged [^<]*25[.,]50/);
  });
});

describe('the HTML summary writes each currency with its ISO 4217 minor unit', function () {
  this.timeout(30_000);
  const db = useFreshDatabase('at_risk_units');
  let sql: Pool;
  before(async () => {
    sql = sqlPool(db.url);
    await raise(sql, { amountAtRisk: '1500', currency: 'JPY' });
    await raise(sql, { amountAtRisk: '12.5', currency: 'KWD' });
    await raise(sql, { amountAtRisk: '15000', currency: 'IDR' });
  });
  after(() => sql?.end());

  it('in the totals, the partner chart and the rows: 1,500 JPY, 12.500 KWD, 15,000.00 IDR', async () => {
    const html = renderHtmlSummary(await summaryData(sql, {}));
    for (const [amount, currency] of [
      ['1,500', 'JPY'],
      ['12.500', 'KWD'],
      ['15,000.00', 'IDR'],
    ]) {
      expect(html, currency).to.contain(`${amount} <small>${currency}</small>`);
      expect(html, currency).to.contain(`${amount} ${currency}`);
    }
  });
});
