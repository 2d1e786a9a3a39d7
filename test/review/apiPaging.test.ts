import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { encodePageCursor } from '../../src/discrepancies/pageCursor.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { raise, setCreatedAt } from '../discrepancies/seed.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

const TOKEN = 'api-paging-token-0123456789abcdef';

interface ListAnswer {
  total: number;
  limit: number;
  offset?: number;
  after?: string;
  next: string | null;
  rows: { id: string }[];
}

/**
 * A script works through the open discrepancies page by page with `GET /api/discrepancies`, following each
 * page's `next` cursor with `after`, while people keep deciding on the site and the reconciler keeps
 * raising new ones. Every open discrepancy must reach the script once: one acknowledged by a colleague
 * meanwhile must not push another past the script's pages, and a new one must not push a seen one onto
 * the next page again (both happened with `offset`).
 */
describe('the JSON API lists every matching discrepancy once while others change status between pages', () => {
  const db = useFreshDatabase('api_paging');
  let sql: Pool;
  let app: FastifyInstance;

  before(async () => {
    sql = sqlPool(db.url);
    app = createReviewServer({ pool: sql, token: TOKEN });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await sql?.end();
  });

  async function get(query: string) {
    return app.inject({
      method: 'GET',
      url: `/api/discrepancies?${query}`,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
  }

  async function page(query: string): Promise<ListAnswer> {
    const response = await get(query);
    expect(response.statusCode, response.body).to.equal(200);
    return response.json();
  }

  /** Every page of `filter` from the first, by `next`; `between` runs after each page but the last. */
  async function walk(filter: string, between: (seen: string[]) => Promise<void> = async () => {}) {
    const seen: string[] = [];
    let answer = await page(filter);
    for (;;) {
      seen.push(...answer.rows.map((row) => row.id));
      if (answer.next === null) return seen;
      await between(seen);
      answer = await page(`${filter}&after=${answer.next}`);
    }
  }

  it('status=open, two per page: a row of page 1 acknowledged before page 2 does not hide a row', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await raise(sql, { partner: 'paging-pay' }));
    const filter = 'partner=paging-pay&status=open&sort=createdAt&dir=asc&limit=2';
    const first = await page(filter);
    const seen = first.rows.map((row) => row.id);
    // A colleague acknowledges the first one on the site while the script reads page 1.
    await reviewDiscrepancies(sql, [seen[0]], 'acknowledge', { note: 'looking', by: 'bea' });
    const open = ids.filter((id) => id !== seen[0]);
    expect(first.next).to.be.a('string');
    const second = await page(`${filter}&after=${first.next}`);
    for (const row of second.rows) seen.push(row.id);
    // Every discrepancy still open was listed to the script (the one acknowledged was, before).
    expect(
      open.filter((id) => !seen.includes(id)),
      'open discrepancies the script never saw',
    ).to.deep.equal([]);
    expect(seen, 'each listed once').to.deep.equal([...new Set(seen)]);
    expect(second.next, 'page 2 is the last').to.equal(null);
  });

  it('status=open, every sort and direction: walking by next while a colleague acknowledges rows returns each open one exactly once', async () => {
    // Ties on every sort key: two creation instants, two amounts and a NULL, two kinds, one partner.
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) {
      const id = await raise(sql, {
        partner: 'walk-pay',
        kind: i % 2 ? 'amount_mismatch' : 'unresolved',
        amountAtRisk: [null, '5.00', '12.30'][i % 3],
      });
      await setCreatedAt(sql, id, i % 2 ? '2024-06-01T00:00:00Z' : '2024-06-02T00:00:00Z');
      ids.push(id);
    }
    for (const sort of ['createdAt', 'amountAtRisk', 'partner', 'kind', 'status']) {
      for (const dir of ['asc', 'desc']) {
        const acknowledged: string[] = [];
        const seen = await walk(
          `partner=walk-pay&status=open&sort=${sort}&dir=${dir}&limit=3`,
          async (rows) => {
            // Between pages a colleague acknowledges one the script saw and one it has not seen yet.
            const unseen = ids.find((id) => !rows.includes(id) && !acknowledged.includes(id));
            const done = [rows[rows.length - 1], ...(unseen ? [unseen] : [])];
            await reviewDiscrepancies(sql, done, 'acknowledge', { note: 'on it', by: 'bea' });
            acknowledged.push(...done);
          },
        );
        const label = `${sort} ${dir}`;
        expect(seen, `${label}: each listed once`).to.deep.equal([...new Set(seen)]);
        const stillOpen = ids.filter((id) => !acknowledged.includes(id));
        expect(
          stillOpen.filter((id) => !seen.includes(id)),
          `${label}: open discrepancies the script never saw`,
        ).to.deep.equal([]);
        // Reopen for the next order (there is no review action back to open).
        await sql.query(`UPDATE discrepancies SET status = 'open' WHERE id = ANY($1::bigint[])`, [ids]);
      }
    }
  });

  it('newest first: discrepancies raised between pages neither repeat a row nor push one past the pages', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await raise(sql, { partner: 'arrivals-pay' }));
    const raised: string[] = [];
    const seen = await walk('partner=arrivals-pay&limit=2', async () => {
      // The reconciler raises two new ones, at the top of the default order, while the script reads.
      for (let i = 0; i < 2; i++) raised.push(await raise(sql, { partner: 'arrivals-pay' }));
    });
    expect(seen, 'each listed once, newest first').to.deep.equal([...ids].reverse());
    // The new ones are ahead of where the script started: the next walk from the first page finds them.
    const again = await walk('partner=arrivals-pay&limit=2');
    expect(again).to.deep.equal([...ids, ...raised].reverse());
  });

  it('offset still works for existing scripts, and every page carries next (null on the last)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await raise(sql, { partner: 'offset-pay' }));
    const first = await page('partner=offset-pay&sort=createdAt&dir=asc&limit=2&offset=1');
    expect(first).to.include({ total: 3, limit: 2, offset: 1, next: null });
    expect(first.rows.map((row) => row.id)).to.deep.equal(ids.slice(1));
    const start = await page('partner=offset-pay&sort=createdAt&dir=asc&limit=2');
    expect(start).to.include({ total: 3, limit: 2, offset: 0 });
    const rest = await page(`partner=offset-pay&sort=createdAt&dir=asc&limit=2&after=${start.next}`);
    expect(rest).to.include({ total: 3, limit: 2, after: start.next, next: null });
    expect(rest).not.to.have.property('offset');
    expect(rest.rows.map((row) => row.id)).to.deep.equal(ids.slice(2));
  });

  it('a malformed cursor, one of another sort or direction, or after with offset is a 400 BAD_FILTER naming after', async () => {
    const { next } = await page('sort=partner&dir=asc&limit=1');
    expect(next).to.be.a('string');
    const refusals: [string, RegExp][] = [
      ['after=not-a-cursor', /^after is not a cursor this list gave as next$/],
      ['after=%20', /^after is not a cursor this list gave as next$/],
      [`after=${next}%3D`, /^after is not a cursor this list gave as next$/],
      [
        `after=${encodePageCursor({ sort: 'createdAt', direction: 'desc' }, { value: '2024-13-01T00:00:00.000000Z', id: '1' })}`,
        /^after is not a cursor this list gave as next$/,
      ],
      [
        `sort=kind&dir=asc&after=${next}`,
        /^after is a cursor of the list sorted by partner asc, not by kind asc/,
      ],
      [`sort=partner&dir=desc&after=${next}`, /not by partner desc/],
      [`after=${next}`, /not by createdAt desc/],
      [`sort=partner&dir=asc&after=${next}&offset=0`, /^after and offset cannot be used together/],
      [`sort=partner&dir=asc&offset=2&after=${next}`, /^after and offset cannot be used together/],
    ];
    for (const [query, message] of refusals) {
      const response = await get(query);
      expect(response.statusCode, query).to.equal(400);
      const { error } = response.json();
      expect(error.code, query).to.equal('BAD_FILTER');
      expect(error.message, query).to.match(message);
    }
  });
});
