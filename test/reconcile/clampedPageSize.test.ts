import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { listenOnLoopback } from '../support/loopbackServer.js';
import {
  dbNow,
  fakePartnerReconciler,
  intentRow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

/** The most items the partner puts on one page, whatever `size` asks for (many APIs clamp it silently). */
const PARTNER_MAX_PAGE = 2;

/**
 * A numbered-page listing (`?page&size`) that clamps the page size, as many APIs do (a maximum `per_page`
 * of 100, say, with no error for asking more): asked for 100 a page, it answers two, and the rest on the
 * following pages. Its answer even says so (`size`, `total`).
 */
async function startClampingPartner(
  executions: { id: string; reference: string; executedAt: Date }[],
): Promise<{ url: string; pagesAsked: number[]; close(): Promise<void> }> {
  const pagesAsked: number[] = [];
  const server = await listenOnLoopback((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const page = Number(url.searchParams.get('page'));
    pagesAsked.push(page);
    const size = Math.min(Number(url.searchParams.get('size') ?? PARTNER_MAX_PAGE), PARTNER_MAX_PAGE);
    const data = executions.slice((page - 1) * size, page * size).map((e) => ({
      id: e.id,
      reference: e.reference,
      amount: '10.00',
      currency: 'BRL',
      executed_at: e.executedAt.toISOString(),
    }));
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ data, page, size, total: executions.length }));
  });
  return { ...server, pagesAsked };
}

describe('reconcile: a numbered-page listing whose partner clamps the page size', () => {
  const fx = useReconcileFixture('rec_clamped_pages');

  it('an execution on the second page is never proven absent because the first page was shorter than asked', async () => {
    const partner = partnerName('clamped');
    const now = await dbNow(fx.sql);
    const refs = ['a', 'b', 'c', 'd'].map((name) => `${partner}-${name}`);
    const ids: string[] = [];
    for (const ref of refs) {
      const id = await unknownIntent(fx.ledger, spec(partner, ref));
      await place(fx.sql, id, { startedAt: minutes(now, -180) });
      ids.push(id);
    }
    // Every intent's charge went through: four executions, two a page.
    const partnerApi = await startClampingPartner(
      refs.map((reference, n) => ({ id: `ch_${n}`, reference, executedAt: minutes(now, -179 + n) })),
    );
    try {
      const [run] = await reconcile({
        pool: fx.sql,
        reconciler: fakePartnerReconciler(partner, {
          baseUrl: partnerApi.url,
          pagination: { type: 'page', size: 100 },
        }),
      });
      expect(run.status, `error: ${run.error}`).to.equal('succeeded');
      // The listing has two pages and one empty one after them; stopping at page 1 drops c and d.
      const statuses = await Promise.all(ids.map(async (id) => (await intentRow(fx.sql, id)).status));
      expect(statuses, `pages asked: ${partnerApi.pagesAsked.join(', ')}`).to.deep.equal([
        'completed',
        'completed',
        'completed',
        'completed',
      ]);
    } finally {
      await partnerApi.close();
    }
  });
});
