import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Queryable } from '../../src/database/queryable.js';
import type { DiscrepancyFilter, DiscrepancySummary } from '../../src/discrepancies/discrepancyTypes.js';
import { streamDiscrepanciesKeyset } from '../../src/discrepancies/keysetDiscrepancies.js';
import { countDiscrepancies, listDiscrepancies } from '../../src/discrepancies/listDiscrepancies.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import { rejectionOf, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { idsOf, raise, setCreatedAt } from './seed.js';

async function collect(rows: AsyncIterable<DiscrepancySummary>): Promise<DiscrepancySummary[]> {
  const all: DiscrepancySummary[] = [];
  for await (const row of rows) all.push(row);
  return all;
}

describe('listing discrepancies: filters, sorting, pagination, streaming', () => {
  const db = useFreshDatabase('disc_list');
  let sql: Pool;
  const d: Record<string, string> = {};

  before(async () => {
    sql = sqlPool(db.url);
    const make = async (
      name: string,
      fields: Parameters<typeof raise>[1],
      createdAt: string,
      status?: 'acknowledge' | 'resolve' | 'dismiss',
    ) => {
      d[name] = await raise(sql, fields);
      if (status) await reviewDiscrepancies(sql, [d[name]], status, { note: 'seed', by: 'seed' });
      await setCreatedAt(sql, d[name], createdAt);
    };
    await make(
      'd1',
      { partner: 'acme-pay', kind: 'amount_mismatch', amountAtRisk: '10.00', reference: 'order-A1' },
      '2024-05-01T10:00:00Z',
    );
    await make(
      'd2',
      { partner: 'acme-pay', kind: 'duplicate_execution', amountAtRisk: '9.50', reference: 'ORDER-b2' },
      '2024-05-02T10:00:00Z',
      'acknowledge',
    );
    await make(
      'd3',
      {
        partner: 'globex-sms',
        kind: 'missing_at_partner',
        amountAtRisk: '100',
        currency: 'USD',
        reference: 'sms-3',
      },
      '2024-05-03T10:00:00Z',
    );
    await make(
      'd4',
      {
        partner: 'globex-sms',
        kind: 'orphan_partner_record',
        amountAtRisk: null,
        currency: null,
        reference: null,
        partnerReference: 'GX-4',
      },
      '2024-05-04T10:00:00Z',
      'resolve',
    );
    await make(
      'd5',
      { partner: 'acme-pay', kind: 'unresolved', amountAtRisk: '12345678901234567.89', reference: 'order-5' },
      '2024-05-05T10:00:00Z',
      'dismiss',
    );
    await make(
      'd6',
      { partner: 'acme-pay', kind: 'amount_mismatch', amountAtRisk: '10.00', reference: 'order-6' },
      '2024-05-01T10:00:00Z',
    );
    await make(
      'd7',
      { partner: 'initech', kind: 'late_completion', amountAtRisk: '-5.00', reference: 'late-7' },
      '2024-05-06T10:00:00Z',
    );
  });
  after(async () => {
    await sql.end();
  });

  const ids = (...names: string[]) => names.map((name) => d[name]);
  const list = async (filter: DiscrepancyFilter) => {
    const { rows, total } = await listDiscrepancies(sql, filter);
    return { ids: idsOf(rows), total };
  };

  it('default: newest first, ties broken by id (same direction), everything mapped', async () => {
    expect(await list({})).to.deep.equal({ ids: ids('d7', 'd5', 'd4', 'd3', 'd2', 'd6', 'd1'), total: 7 });
    const { rows } = await listDiscrepancies(sql, { limit: 1, offset: 4 });
    expect(rows[0]).to.deep.equal({
      id: d.d2,
      kind: 'duplicate_execution',
      partner: 'acme-pay',
      status: 'acknowledged',
      reference: 'ORDER-b2',
      partnerReference: rows[0].partnerReference,
      amountAtRisk: '9.50',
      currency: 'BRL',
      summary: rows[0].summary,
      assignee: null,
      intentId: null,
      runId: null,
      createdAt: new Date('2024-05-02T10:00:00Z'),
      updatedAt: new Date('2024-05-02T10:00:00Z'),
    });
  });

  it('filters by status, partner, kind (each a list), since and search, combined with AND', async () => {
    expect(await list({ status: ['open'] })).to.deep.equal({ ids: ids('d7', 'd3', 'd6', 'd1'), total: 4 });
    expect(await list({ status: ['open', 'acknowledged'], partner: ['acme-pay'] })).to.deep.equal({
      ids: ids('d2', 'd6', 'd1'),
      total: 3,
    });
    expect(await list({ partner: ['globex-sms', 'initech'] })).to.deep.equal({
      ids: ids('d7', 'd4', 'd3'),
      total: 3,
    });
    expect(await list({ kind: ['amount_mismatch'] })).to.deep.equal({ ids: ids('d6', 'd1'), total: 2 });
    expect(await list({ since: new Date('2024-05-03T10:00:00Z') })).to.deep.equal({
      ids: ids('d7', 'd5', 'd4', 'd3'),
      total: 4,
    });
    expect(await list({ search: 'order-b' })).to.deep.equal({ ids: ids('d2'), total: 1 });
    expect(await list({ search: ' gx-4 ' })).to.deep.equal({ ids: ids('d4'), total: 1 });
    expect(await list({ search: '%' })).to.deep.equal({ ids: [], total: 0 });
    expect(await list({ status: [], partner: [], kind: [], search: '  ' })).to.have.property('total', 7);
  });

  it('filter values are parameters, never SQL', async () => {
    expect(await list({ partner: ["x' OR '1'='1"] })).to.deep.equal({ ids: [], total: 0 });
    expect(await list({ search: "'; DROP TABLE discrepancies; --" })).to.deep.equal({ ids: [], total: 0 });
    expect(await countDiscrepancies(sql)).to.equal(7);
  });

  it('sorts only by whitelisted keys', async () => {
    const bad = await rejectionOf(listDiscrepancies(sql, { sort: 'id; DROP TABLE x' as 'kind' }));
    expect(bad).to.be.instanceOf(RangeError);
    const badDirection = await rejectionOf(listDiscrepancies(sql, { direction: 'sideways' as 'asc' }));
    expect(badDirection).to.be.instanceOf(RangeError);
  });

  it('amount sort is numeric (9.50 < 10.00 < 100 < 12345678901234567.89), negative first, unknown last', async () => {
    expect((await list({ sort: 'amountAtRisk', direction: 'asc' })).ids).to.deep.equal(
      ids('d7', 'd2', 'd1', 'd6', 'd3', 'd5', 'd4'),
    );
    expect((await list({ sort: 'amountAtRisk', direction: 'desc' })).ids).to.deep.equal(
      ids('d5', 'd3', 'd6', 'd1', 'd2', 'd7', 'd4'),
    );
  });

  it('status sort follows the workflow; partner and kind sort alphabetically', async () => {
    expect((await list({ sort: 'status', direction: 'asc' })).ids).to.deep.equal(
      ids('d1', 'd3', 'd6', 'd7', 'd2', 'd4', 'd5'),
    );
    expect((await list({ sort: 'partner', direction: 'asc' })).ids).to.deep.equal(
      ids('d1', 'd2', 'd5', 'd6', 'd3', 'd4', 'd7'),
    );
    expect((await list({ sort: 'kind', direction: 'asc' })).ids).to.deep.equal(
      ids('d1', 'd6', 'd2', 'd7', 'd3', 'd4', 'd5'),
    );
  });

  it('paginates with limit and offset; total ignores them; limit is clamped to 1000', async () => {
    expect(await list({ limit: 2 })).to.deep.equal({ ids: ids('d7', 'd5'), total: 7 });
    expect(await list({ limit: 2, offset: 2 })).to.deep.equal({ ids: ids('d4', 'd3'), total: 7 });
    expect(await list({ limit: 2, offset: 6 })).to.deep.equal({ ids: ids('d1'), total: 7 });
    expect(await list({ limit: 2, offset: 100 })).to.deep.equal({ ids: [], total: 7 });
    expect(await list({ status: ['open'], limit: 1 })).to.deep.equal({ ids: ids('d7'), total: 4 });
    expect(await list({ limit: 0 })).to.deep.equal({ ids: [], total: 7 });
    expect((await list({ limit: 1_000_000 })).ids).to.have.length(7);
  });

  const streamers = [
    ['cursor', streamDiscrepancies],
    ['keyset', streamDiscrepanciesKeyset],
  ] as const;
  for (const [mode, stream] of streamers) {
    for (const sort of ['createdAt', 'amountAtRisk', 'partner', 'kind', 'status'] as const) {
      for (const direction of ['asc', 'desc'] as const) {
        it(`${mode} streaming in batches of 2 yields exactly the list order (${sort} ${direction}, ties and NULLs included)`, async () => {
          const listed = (await list({ sort, direction })).ids;
          const streamed = idsOf(await collect(stream(sql, { sort, direction }, { batchSize: 2 })));
          expect(streamed).to.deep.equal(listed);
          const window = idsOf(
            await collect(stream(sql, { sort, direction, limit: 3, offset: 1 }, { batchSize: 2 })),
          );
          expect(window).to.deep.equal(listed.slice(1, 4));
        });
      }
    }
  }

  it('streaming honours the filter', async () => {
    const streamed = await collect(
      streamDiscrepancies(sql, { status: ['open'], partner: ['acme-pay'] }, { batchSize: 1 }),
    );
    expect(idsOf(streamed)).to.deep.equal(ids('d6', 'd1'));
  });
});

describe('streaming a large export', () => {
  const db = useFreshDatabase('disc_stream');
  let sql: Pool;
  before(async () => {
    sql = sqlPool(db.url);
    // 2500 rows, in groups of 7 sharing one created_at instant (ties across batch boundaries).
    await sql.query(`
      INSERT INTO discrepancies (kind, partner, reference, amount_at_risk, currency, summary, dedupe_key, created_at)
      SELECT 'amount_mismatch', 'bulk', 'ref-' || g, ((g % 13) || '.' || lpad((g % 100)::text, 2, '0'))::numeric, 'BRL',
             'bulk ' || g, 'bulk-' || g, timestamptz '2024-05-01T00:00:00Z' + ((g / 7) * interval '1.000001 second')
        FROM generate_series(1, 2500) AS g`);
  });
  after(async () => {
    await sql.end();
  });

  /** A pool whose clients count FETCHes and releases. */
  function countingPool() {
    const seen = { fetched: [] as number[], released: 0, releasedWithError: 0 };
    const pool = {
      connect: async () => {
        const client = await sql.connect();
        return new Proxy(client, {
          get(target, key, receiver) {
            if (key === 'query')
              return async (text: string, values?: unknown[]) => {
                const result = await target.query(text, values);
                if (/^FETCH/.test(text)) seen.fetched.push(result.rows.length);
                return result;
              };
            if (key === 'release')
              return (error?: Error) => {
                seen.released++;
                if (error) seen.releasedWithError++;
                target.release(error);
              };
            return Reflect.get(target, key, receiver);
          },
        });
      },
    };
    return { pool, seen };
  }

  it('cursor: reads 2500 rows with FETCHes of 1000 from one sorted cursor, each row once, in order', async () => {
    const { pool, seen } = countingPool();
    const streamed = idsOf(await collect(streamDiscrepancies(pool, { partner: ['bulk'] })));
    expect(seen.fetched).to.deep.equal([1000, 1000, 500]);
    expect(seen).to.include({ released: 1, releasedWithError: 0 });
    expect(new Set(streamed).size).to.equal(2500);
    const expected = await sql.query<{ id: string }>(
      `SELECT id FROM discrepancies WHERE partner = 'bulk' ORDER BY created_at DESC, id DESC`,
    );
    expect(streamed).to.deep.equal(idsOf(expected.rows));
    const byAmount = idsOf(
      await collect(streamDiscrepancies(sql, { sort: 'amountAtRisk', direction: 'asc' })),
    );
    const expectedByAmount = await sql.query<{ id: string }>(
      `SELECT id FROM discrepancies ORDER BY amount_at_risk ASC NULLS LAST, id ASC`,
    );
    expect(byAmount).to.deep.equal(idsOf(expectedByAmount.rows));
  });

  it('cursor: a consumer that stops early ends the transaction and gives the client back', async () => {
    const { pool, seen } = countingPool();
    let seenRows = 0;
    for await (const _row of streamDiscrepancies(pool, {})) {
      if (++seenRows === 1500) break;
    }
    expect(seen.fetched).to.deep.equal([1000, 1000]);
    expect(seen).to.include({ released: 1, releasedWithError: 0 });
    const open = await sql.query(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
    );
    expect(Number(open.rows[0].n)).to.equal(0);
  });

  it('keyset: reads 2500 rows in 3 queries of at most 1000 rows, each row once, in order', async () => {
    const queries: number[] = [];
    const counting: Queryable = {
      query: async (text, values) => {
        const result = await sql.query(text, values);
        queries.push(result.rows.length);
        return result as never;
      },
    };
    const streamed = idsOf(await collect(streamDiscrepanciesKeyset(counting, { partner: ['bulk'] })));
    expect(queries).to.deep.equal([1000, 1000, 500]);
    const expected = await sql.query<{ id: string }>(
      `SELECT id FROM discrepancies WHERE partner = 'bulk' ORDER BY created_at DESC, id DESC`,
    );
    expect(streamed).to.deep.equal(idsOf(expected.rows));
  });

  it('keyset: stops early without reading further batches when the consumer breaks', async () => {
    let queries = 0;
    const counting: Queryable = {
      query: async (text, values) => {
        queries++;
        return (await sql.query(text, values)) as never;
      },
    };
    let seen = 0;
    for await (const _row of streamDiscrepanciesKeyset(counting, {})) {
      if (++seen === 1500) break;
    }
    expect(queries).to.equal(2);
  });
});
