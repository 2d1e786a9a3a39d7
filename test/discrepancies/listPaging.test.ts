import { expect } from 'chai';
import type { Pool } from 'pg';
import type { DiscrepancyFilter } from '../../src/discrepancies/discrepancyTypes.js';
import { type DiscrepancyPageFilter, listDiscrepancies } from '../../src/discrepancies/listDiscrepancies.js';
import { encodePageCursor } from '../../src/discrepancies/pageCursor.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { rejectionOf, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { idsOf, raise, setCreatedAt } from './seed.js';

const SORTS = ['createdAt', 'amountAtRisk', 'partner', 'kind', 'status'] as const;
const DIRECTIONS = ['asc', 'desc'] as const;

/**
 * `listDiscrepancies` with `after`: following `next` from the first page visits every row once, in list
 * order, for every sort and direction, across ties on the sort value (the id breaks them) and NULL amounts.
 */
describe('listing discrepancies page by page with the after/next cursor', () => {
  const db = useFreshDatabase('disc_list_paging');
  let sql: Pool;
  let all: string[] = [];

  before(async () => {
    sql = sqlPool(db.url);
    // 24 rows, few distinct values per sort key: every page boundary falls inside a tie somewhere.
    // 10.0 and 10.00 are one numeric written two ways; two instants differ by a microsecond only.
    const instants = ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00.000001Z', '2024-05-02T10:00:00Z'];
    const amounts = ['10.00', null, '9.50', '10.0', null, '-3.00', '100'];
    const partners = ['acme-pay', 'globex-sms', 'initech'];
    const kinds = ['amount_mismatch', 'duplicate_execution', 'unresolved', 'missing_at_partner'] as const;
    for (let i = 0; i < 24; i++) {
      const id = await raise(sql, {
        partner: partners[i % 3],
        kind: kinds[i % 4],
        amountAtRisk: amounts[i % 7],
        currency: amounts[i % 7] === null ? null : 'BRL',
      });
      await setCreatedAt(sql, id, instants[(i * 5) % 3]);
      if (i % 5 === 1) await reviewDiscrepancies(sql, [id], 'acknowledge', { note: 'seed', by: 'seed' });
      if (i % 5 === 3) await reviewDiscrepancies(sql, [id], 'dismiss', { note: 'seed', by: 'seed' });
      all.push(id);
    }
    all = all.sort();
  });
  after(async () => {
    await sql.end();
  });

  /** Every page from the first, by `next`; the ids in the order listed. */
  async function walk(filter: DiscrepancyFilter, limit: number): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let after: string | undefined;
    for (let pages = 1; pages <= 100; pages++) {
      const page: DiscrepancyPageFilter =
        after === undefined ? { ...filter, limit } : { ...filter, limit, after };
      const { rows, next } = await listDiscrepancies(sql, page);
      ids.push(...idsOf(rows));
      if (next === null) return { ids, pages };
      expect(rows, 'a page with a next cursor is full').to.have.length(limit);
      after = next;
    }
    throw new Error('the walk never ended');
  }

  for (const sort of SORTS) {
    for (const direction of DIRECTIONS) {
      it(`${sort} ${direction}: pages of 1, 2, 5 and 7 visit every row once, in list order`, async () => {
        const listed = idsOf((await listDiscrepancies(sql, { sort, direction, limit: 1000 })).rows);
        expect([...listed].sort(), 'the whole list is every row').to.deep.equal(all);
        for (const limit of [1, 2, 5, 7]) {
          const { ids, pages } = await walk({ sort, direction }, limit);
          expect(ids, `pages of ${limit}`).to.deep.equal(listed);
          expect(pages).to.equal(Math.max(1, Math.ceil(listed.length / limit)));
        }
      });
    }
  }

  it('NULL amounts come last in both directions, and the walk goes on through them', async () => {
    for (const direction of DIRECTIONS) {
      const { rows } = await listDiscrepancies(sql, { sort: 'amountAtRisk', direction, limit: 1000 });
      const firstNull = rows.findIndex((row) => row.amountAtRisk === null);
      expect(firstNull).to.be.greaterThan(0);
      expect(rows.slice(firstNull).every((row) => row.amountAtRisk === null)).to.equal(true);
      expect(rows.length - firstNull, 'more NULL rows than a page of 2').to.be.greaterThan(2);
    }
  });

  it('the last page has next null; a filter that matches nothing too', async () => {
    const last = await listDiscrepancies(sql, { limit: all.length });
    expect(last.rows).to.have.length(all.length);
    expect(last.next).to.equal(null);
    const none = await listDiscrepancies(sql, { partner: ['nobody'], limit: 5 });
    expect(none).to.deep.equal({ rows: [], total: 0, next: null });
    // An offset page tells where the list goes on too: a caller paging by offset can switch to `after`.
    const byOffset = await listDiscrepancies(sql, { limit: 3, offset: 3 });
    const onward = await listDiscrepancies(sql, { limit: 3, after: byOffset.next ?? 'none' });
    const listed = idsOf((await listDiscrepancies(sql, { limit: 1000 })).rows);
    expect(idsOf(onward.rows)).to.deep.equal(listed.slice(6, 9));
  });

  it('the filter applies after the cursor: rows that left it are not listed, the others not moved', async () => {
    const filter: DiscrepancyFilter = { status: ['open'], sort: 'partner', direction: 'asc' };
    const first = await listDiscrepancies(sql, { ...filter, limit: 3 });
    const before = idsOf((await listDiscrepancies(sql, { ...filter, limit: 1000 })).rows);
    // Someone acknowledges a row of the first page and one of the rest.
    const leaving = [idsOf(first.rows)[0], before[5]];
    await reviewDiscrepancies(sql, leaving, 'acknowledge', { note: 'looking', by: 'bea' });
    try {
      const rest = await listDiscrepancies(sql, { ...filter, limit: 1000, after: first.next ?? 'none' });
      expect(idsOf(rest.rows)).to.deep.equal(before.slice(3).filter((id) => id !== before[5]));
      expect(rest.total).to.equal(before.length - 2);
    } finally {
      // Back to open is no review action: put the rows back as seeded for the other cases.
      await sql.query(`UPDATE discrepancies SET status = 'open' WHERE id = ANY($1::bigint[])`, [leaving]);
    }
  });

  it('refuses a malformed cursor, one of another sort or direction, and after with offset (RangeError naming after)', async () => {
    const good = (await listDiscrepancies(sql, { sort: 'partner', direction: 'asc', limit: 2 })).next;
    expect(good).to.be.a('string');
    const refused = async (filter: DiscrepancyPageFilter) => {
      const error = await rejectionOf(listDiscrepancies(sql, filter));
      expect(error, JSON.stringify(filter)).to.be.instanceOf(RangeError);
      expect((error as Error).message).to.match(/^after /);
      return (error as Error).message;
    };
    await refused({ after: 'not a cursor' });
    await refused({ after: '' });
    expect(await refused({ sort: 'kind', direction: 'asc', after: good! })).to.contain(
      'sorted by partner asc, not by kind asc',
    );
    expect(await refused({ sort: 'partner', direction: 'desc', after: good! })).to.contain(
      'not by partner desc',
    );
    // The default order is createdAt desc.
    expect(await refused({ after: good! })).to.contain('not by createdAt desc');
    const error = await rejectionOf(
      listDiscrepancies(sql, { sort: 'partner', direction: 'asc', after: good!, offset: 0 }),
    );
    expect(error).to.be.instanceOf(RangeError);
    expect((error as Error).message).to.equal('after and offset cannot be used together');
  });

  it('refuses hand-made cursors PostgreSQL could not cast, before any SQL', async () => {
    const order = (sort: (typeof SORTS)[number]) => ({ sort, direction: 'asc' as const });
    const made = (sort: (typeof SORTS)[number], value: string | null, id = '1') =>
      encodePageCursor(order(sort), { value, id });
    const raw = (text: string) => Buffer.from(text).toString('base64url');
    const bad: [(typeof SORTS)[number], string][] = [
      ['createdAt', made('createdAt', '2024-02-30T10:00:00.000000Z')],
      ['createdAt', made('createdAt', '2024-05-01T10:00:00Z')],
      ['createdAt', made('createdAt', null)],
      ['amountAtRisk', made('amountAtRisk', '1e5')],
      ['amountAtRisk', made('amountAtRisk', '10,00')],
      ['status', made('status', '5')],
      ['status', made('status', 'open')],
      ['partner', made('partner', 'acme\u0000pay')],
      ['partner', made('partner', null)],
      ['partner', made('partner', 'acme-pay', '0')],
      ['partner', made('partner', 'acme-pay', '9223372036854775808')],
      ['partner', made('partner', 'acme-pay', '12abc')],
      ['partner', raw('{"sort":"partner","dir":"asc","value":"acme-pay"}')],
      ['partner', raw('["partner","asc","acme-pay","1"]')],
      ['partner', raw('{not json')],
      ['partner', `${made('partner', 'acme-pay')}=`],
      ['partner', 'a'.repeat(5000)],
    ];
    for (const [sort, after] of bad) {
      const error = await rejectionOf(listDiscrepancies(sql, { sort, direction: 'asc', after }));
      expect(error, Buffer.from(after, 'base64url').toString()).to.be.instanceOf(RangeError);
      expect((error as Error).message).to.equal('after is not a cursor this list gave as next');
    }
    // The same shapes with sound values are accepted: the checks refuse what cannot cast, nothing more.
    for (const [sort, value] of [
      ['createdAt', '2024-02-29T10:00:00.000001Z'],
      ['amountAtRisk', null],
      ['amountAtRisk', '-0.001'],
      ['status', '4'],
      ['partner', "x' OR '1'='1"],
    ] as const) {
      const page = await listDiscrepancies(sql, { sort, direction: 'asc', after: made(sort, value, '42') });
      expect(page.total).to.equal(all.length);
    }
  });
});
