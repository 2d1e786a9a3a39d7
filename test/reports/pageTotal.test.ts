import { expect } from 'chai';
import globex from '../../reconcilers/globex-sms.js';
import type { ReconcilerApiSource } from '../../src/reconcile/reconcilerConfig.js';
import { validateReconciler } from '../../src/reconcile/validateReconciler.js';
import type { ApiSourceConfig } from '../../src/reports/apiSourceConfig.js';
import { PartnerApiError } from '../../src/reports/errors/PartnerApiError.js';
import type { ReportItem } from '../../src/reports/partnerRow.js';
import { readApiReport } from '../../src/reports/readApiReport.js';
import { listenOnLoopback } from '../support/loopbackServer.js';

const item = (n: number) => ({ id: `it-${n}`, reference: `order-${n}`, executed_at: '2026-11-30T10:00:00Z' });

/** A numbered-page partner whose answer to page N is `pages[N - 1]` (an empty page past them). */
async function servePages(
  pages: { data: unknown[]; total?: unknown }[],
): Promise<{ url: string; asked: number[]; close(): Promise<void> }> {
  const asked: number[] = [];
  const server = await listenOnLoopback((request, response) => {
    const page = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('page'));
    asked.push(page);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(pages[page - 1] ?? { data: [], total: pages[0]?.total }));
  });
  return { ...server, asked };
}

function source(url: string, total: string | undefined): ApiSourceConfig {
  return {
    type: 'api',
    baseUrl: url,
    path: '/v1/settlements',
    pagination: { type: 'page', size: 2, ...(total === undefined ? {} : { total }) },
    fields: { reference: 'reference', partnerReference: 'id', executedAt: 'executed_at' },
    retries: 0,
  };
}

async function read(config: ApiSourceConfig): Promise<ReportItem[]> {
  const items: ReportItem[] = [];
  for await (const one of readApiReport(config, { partner: 'p', timezone: 'UTC' })) items.push(one);
  return items;
}

async function failure(config: ApiSourceConfig): Promise<PartnerApiError> {
  const error = await read(config).catch((caught: unknown) => caught);
  expect(error).to.be.instanceOf(PartnerApiError);
  return error as PartnerApiError;
}

describe('reports: numbered pages and the item count the partner declares (pagination.total)', () => {
  it('a page shorter than the size asked for does not end the listing; the first empty one does', async () => {
    const partner = await servePages([{ data: [item(1)] }, { data: [item(2), item(3)] }]);
    try {
      expect(await read(source(partner.url, undefined))).to.have.length(3);
      expect(partner.asked).to.deep.equal([1, 2, 3]);
    } finally {
      await partner.close();
    }
  });

  it('with total, a listing read to its empty page with exactly that many items is complete', async () => {
    const partner = await servePages([
      { data: [item(1), item(2)], total: 3 },
      { data: [item(3)], total: 3 },
    ]);
    try {
      expect(await read(source(partner.url, 'total'))).to.have.length(3);
      expect(partner.asked).to.deep.equal([1, 2, 3]);
    } finally {
      await partner.close();
    }
  });

  it('with total, an empty page handed out mid-listing fails it rather than pass for its end', async () => {
    const partner = await servePages([
      { data: [item(1), item(2)], total: 4 },
      { data: [], total: 4 },
      { data: [item(3), item(4)], total: 4 },
    ]);
    try {
      const error = await failure(source(partner.url, 'total'));
      expect(error.code).to.equal('bad_body');
      expect(error.message).to.contain('is empty at page 2 after 2 items, but the listing says it holds 4');
    } finally {
      await partner.close();
    }
  });

  it('with total, more items than declared, or a count that changes between pages, fails the listing', async () => {
    const more = await servePages([{ data: [item(1), item(2)], total: 1 }]);
    const moved = await servePages([
      { data: [item(1), item(2)], total: 3 },
      { data: [item(3), item(4)], total: 4 },
    ]);
    try {
      expect((await failure(source(more.url, 'total'))).message).to.contain(
        'gives item 2 at page 1, but the listing says it holds 1 (total)',
      );
      expect((await failure(source(moved.url, 'total'))).message).to.contain(
        'says the listing holds 4 items at page 2, where page 1 said 3',
      );
    } finally {
      await more.close();
      await moved.close();
    }
  });

  it('with total, an answer without a whole count there fails the listing, naming the setting', async () => {
    for (const total of [undefined, '3', 2.5, -1]) {
      const partner = await servePages([{ data: [item(1)], total }]);
      try {
        const error = await failure(source(partner.url, 'total'));
        expect(error.code).to.equal('bad_body');
        expect(error.message).to.contain('field total is').and.contain('check pagination.total');
      } finally {
        await partner.close();
      }
    }
  });

  it('a total that is not a dot path is a configuration error; validateReconciler knows the key', async () => {
    const error = await failure(source('http://127.0.0.1:9', 'meta..total'));
    expect(error.code).to.equal('config');
    expect(error.message).to.contain('pagination.total must be a dot path');
    const base = globex.source as ReconcilerApiSource;
    const withTotal = { ...globex, source: { ...base, pagination: { type: 'page', total: 'total' } } };
    expect(() => validateReconciler(withTotal, 'reconcilers/globex-sms.ts')).not.to.throw();
    const typo = { ...globex, source: { ...base, pagination: { type: 'page', totl: 'total' } } };
    expect(() => validateReconciler(typo, 'reconcilers/globex-sms.ts')).to.throw(/did you mean/);
  });
});
