import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { raise } from '../discrepancies/seed.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

const TOKEN = 'list-paging-token-0123456789abcdef';
/** The list page's fixed page size (DEFAULT_PAGE_SIZE). */
const PAGE = 50;

interface ListHtml {
  status: number;
  body: string;
  ids: string[];
  next: string | null;
  first: string | null;
}

/**
 * The review site's list, fetched over real HTTP on loopback: its "Next →" link continues after the last
 * row shown (the cursor), so a person clicking through while colleagues decide sees each row once, like a
 * script on the JSON API; "First page" goes back; the links keep the filter and the sort.
 */
describe('the review list page walks by cursor links: Next → and First page', () => {
  const db = useFreshDatabase('review_list_paging');
  let sql: Pool;
  let app: FastifyInstance;
  let base: string;

  before(async () => {
    sql = sqlPool(db.url);
    // 130 rows in groups of 9 sharing a creation instant, amounts with ties and NULLs (every tenth unknown).
    await sql.query(`
      INSERT INTO discrepancies (kind, partner, reference, amount_at_risk, currency, summary, dedupe_key, created_at)
      SELECT 'amount_mismatch', 'html-pay', 'ref-' || g,
             CASE WHEN g % 10 = 0 THEN NULL ELSE (g % 7) || '.50' END::numeric,
             CASE WHEN g % 10 = 0 THEN NULL ELSE 'BRL' END,
             'html ' || g, 'html-' || g, timestamptz '2024-05-01T00:00:00Z' + (g / 9) * interval '1 minute'
        FROM generate_series(1, 130) AS g`);
    app = createReviewServer({ pool: sql, token: TOKEN });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await app?.close();
    await sql?.end();
  });

  /** A link's query as name -> value (the order of the names does not matter). */
  const queryOf = (link: string): Record<string, string> =>
    Object.fromEntries(new URL(link, base).searchParams.entries());

  async function fetchList(path: string): Promise<ListHtml> {
    const response = await fetch(new URL(path, base), { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = await response.text();
    const ids = [...body.matchAll(/<td class="id"><a href="\/discrepancies\/(\d+)">/g)].map((m) => m[1]);
    const link = (rel: string) => {
      const match = new RegExp(`<a class="button" href="([^"]*)" rel="${rel}">`).exec(body);
      return match ? match[1].replaceAll('&amp;', '&') : null;
    };
    return { status: response.status, body, ids, next: link('next'), first: link('first') };
  }

  /** Clicks Next → from `start` to the end; `between` runs after each page but the last. */
  async function clickThrough(start: string, between: (seen: string[]) => Promise<void> = async () => {}) {
    const seen: string[] = [];
    const links: string[] = [];
    let page = await fetchList(start);
    for (let clicks = 0; clicks < 20; clicks++) {
      expect(page.status, page.body).to.equal(200);
      seen.push(...page.ids);
      if (page.next === null) return { seen, links };
      links.push(page.next);
      await between(seen);
      page = await fetchList(page.next);
    }
    throw new Error('Next → never ended');
  }

  async function apiWalk(query: string): Promise<string[]> {
    const seen: string[] = [];
    let after = '';
    for (;;) {
      const response = await fetch(new URL(`/api/discrepancies?${query}&limit=${PAGE}${after}`, base), {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).to.equal(200);
      const answer = (await response.json()) as { rows: { id: string }[]; next: string | null };
      seen.push(...answer.rows.map((row) => row.id));
      if (answer.next === null) return seen;
      after = `&after=${answer.next}`;
    }
  }

  for (const order of [
    '',
    '&sort=amountAtRisk&dir=asc',
    '&sort=createdAt&dir=asc',
    '&sort=status&dir=desc',
  ]) {
    it(`Next → walks the same rows as the API's next, each once (partner=html-pay${order})`, async () => {
      const query = `partner=html-pay${order}`;
      const { seen, links } = await clickThrough(`/?${query}`);
      expect(seen).to.have.length(130);
      expect(seen, 'each listed once').to.deep.equal([...new Set(seen)]);
      expect(seen).to.deep.equal(await apiWalk(query));
      expect(links).to.have.length(2);
      for (const link of links) {
        const url = new URL(link, base);
        // The filter and sort travel exactly as the page got them, plus the cursor.
        const carried = queryOf(link);
        delete carried.after;
        expect(carried).to.deep.equal(queryOf(`/?${query}`));
        expect(url.searchParams.get('after')).to.match(/^[A-Za-z0-9_-]+$/);
      }
    });
  }

  it('while colleagues acknowledge rows and new ones arrive, every open row is shown once; First page goes back', async () => {
    const start = '/?partner=html-pay&status=open&sort=amountAtRisk&dir=desc';
    const acknowledged: string[] = [];
    const { seen } = await clickThrough(start, async (shown) => {
      const all = (
        await sql.query<{ id: string }>(
          `SELECT id::text FROM discrepancies WHERE partner = 'html-pay' AND status = 'open' ORDER BY id`,
        )
      ).rows.map((row) => row.id);
      // One row just shown and one not shown yet are acknowledged; a new one is raised.
      const done = [shown[shown.length - 1], all.find((id) => !shown.includes(id))!];
      await reviewDiscrepancies(sql, done, 'acknowledge', { note: 'on it', by: 'bea' });
      acknowledged.push(...done);
      await raise(sql, { partner: 'html-pay', amountAtRisk: '3.50' });
    });
    expect(seen, 'each listed once').to.deep.equal([...new Set(seen)]);
    const initial = (
      await sql.query<{ id: string }>(`SELECT id::text FROM discrepancies WHERE dedupe_key LIKE 'html-%'`)
    ).rows.map((row) => row.id);
    const stillOpen = initial.filter((id) => !acknowledged.includes(id));
    expect(
      stillOpen.filter((id) => !seen.includes(id)),
      'open rows the person never saw',
    ).to.deep.equal([]);

    const second = await fetchList((await fetchList(start)).next!);
    expect(second.first && queryOf(second.first)).to.deep.equal(queryOf(start));
    expect(second.body).not.to.match(/page \d+ of \d+/);
    expect(second.body).to.contain(`Showing ${PAGE} of `);
    const back = await fetchList(second.first!);
    expect(back.first, 'no First page link on the first page').to.equal(null);
    expect(back.ids).to.have.length(PAGE);
  });

  it('a bad or other-sort cursor, or an old page number, shows the first page and says why', async () => {
    const { next } = await fetchList('/?partner=html-pay&sort=kind&dir=asc');
    for (const [path, message] of [
      ['/?partner=html-pay&after=nonsense', 'after is not a cursor this list gave as next'],
      [
        `/?partner=html-pay&sort=partner&dir=asc&after=${queryOf(next!).after}`,
        'after is a cursor of the list sorted by kind asc, not by partner asc',
      ],
      ['/?partner=html-pay&page=2', 'page numbers are gone (showing the first page)'],
    ]) {
      const page = await fetchList(path);
      expect(page.status, path).to.equal(200);
      expect(page.body, path).to.contain('Ignored part of the filter:');
      expect(page.body, path).to.contain(message);
      expect(page.first, path).to.equal(null);
      expect(page.ids, path).to.have.length(PAGE);
    }
  });
  it('a sort typed without dir shows the arrow of the order the rows really come in (descending)', async () => {
    for (const [sort, label] of [
      ['partner', 'Partner'],
      ['kind', 'Kind'],
      ['amountAtRisk', 'Amount at risk'],
    ]) {
      const page = await fetchList(`/?partner=html-pay&sort=${sort}`);
      const header = new RegExp(
        `<th class="[^"]*" aria-sort="(\\w+)"><a href="[^"]*">${label} <span class="arrow">(.)</span>`,
      ).exec(page.body);
      expect(header?.slice(1), sort).to.deep.equal(['descending', '▼']);
      // ...which is the order the API gives for the same query (descending by default for every sort).
      const api = await fetch(
        new URL(`/api/discrepancies?partner=html-pay&sort=${sort}&dir=desc&limit=50`, base),
        {
          headers: { authorization: `Bearer ${TOKEN}` },
        },
      );
      const { rows } = (await api.json()) as { rows: { id: string }[] };
      expect(page.ids, sort).to.deep.equal(rows.map((row) => row.id));
    }
  });
});
