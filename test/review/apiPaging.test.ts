import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { raise } from '../discrepancies/seed.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

const TOKEN = 'api-paging-token-0123456789abcdef';

/**
 * A script works through the open discrepancies page by page with `GET /api/discrepancies` (limit and
 * offset are all the API offers), while people keep deciding on the site. Every open discrepancy must reach
 * the script once: one acknowledged by a colleague meanwhile must not push another past the script's pages.
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

  async function page(query: string): Promise<{ id: string }[]> {
    const response = await app.inject({
      method: 'GET',
      url: `/api/discrepancies?${query}`,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.statusCode, response.body).to.equal(200);
    return response.json().rows;
  }

  it('status=open, two per page: a row of page 1 acknowledged before page 2 does not hide a row', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await raise(sql, { partner: 'paging-pay' }));
    const filter = 'partner=paging-pay&status=open&sort=createdAt&dir=asc&limit=2';
    const seen = (await page(`${filter}&offset=0`)).map((row) => row.id);
    // A colleague acknowledges the first one on the site while the script reads page 1.
    await reviewDiscrepancies(sql, [seen[0]], 'acknowledge', { note: 'looking', by: 'bea' });
    const open = ids.filter((id) => id !== seen[0]);
    for (const row of await page(`${filter}&offset=2`)) seen.push(row.id);
    // Every discrepancy still open was listed to the script (the one acknowledged was, before).
    expect(
      open.filter((id) => !seen.includes(id)),
      'open discrepancies the script never saw',
    ).to.deep.equal([]);
  });
});
