import { expect } from 'chai';
import { Client } from 'pg';
import type { ClaimOrderMode } from '../../src/ledger/claimOrder.js';
import { claimNewIntent } from '../../src/ledger/sql/claimIntent.js';
import { completeAttempt } from '../../src/ledger/sql/completeAttempt.js';
import { rejectionOf } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

/**
 * The hot path's statements reach PostgreSQL as named (prepared) statements. src/ledger/sql/preparedStatement.ts
 * builds each call's config on a shared prototype, relying on pg keeping that prototype when it copies a
 * config: if a pg upgrade stops doing so, the name is lost and every call is parsed and planned again,
 * silently. This fails then.
 */
describe('prepared statements: the claim and the completion are prepared once per connection', () => {
  const db = useFreshDatabase('prepared');
  let client: Client;
  before(async () => {
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  after(async () => {
    await client?.end();
  });

  it('names them on the connection, with their text', async () => {
    const input = {
      partner: 'acme-pay',
      operation: 'charge',
      key: 'prepared-1',
      fingerprint: 'fp',
      reference: null,
      amount: '10.00',
      currency: 'BRL',
      leaseMs: 30_000,
      owner: 'test',
      partnerHonoursKey: false,
    };
    const first = await claimNewIntent(client, input);
    if (!first.claimed) throw new Error(`a new key was not claimed: ${JSON.stringify(first)}`);
    const claimed = first.row;
    expect(claimed.attempt).to.equal(1);
    const done = await completeAttempt(client, {
      intentId: claimed.id,
      attempt: 1,
      partnerReference: 'NSU-1',
      response: null,
      by: 'caller',
    });
    expect(done).to.deep.equal({ id: claimed.id, attempt: 1 });
    const prepared = await client.query<{ name: string; statement: string }>(
      'SELECT name, statement FROM pg_prepared_statements ORDER BY name',
    );
    expect(prepared.rows.map((r) => r.name)).to.deep.equal([
      'intent_ledger_claim_new',
      'intent_ledger_complete_running',
    ]);
    // The claim inserts, and reads the key only when the insert found it taken, in one statement.
    expect(prepared.rows[0].statement).to.match(/^WITH claimed AS \(\s+INSERT INTO intents \(/);
    expect(prepared.rows[0].statement).to.match(/\bFROM intents i\s+WHERE i\.partner = \$1 AND i\.key = \$3/);
    expect(prepared.rows[1].statement).to.match(/^UPDATE intents\s/);
  });

  it('answers a duplicate delivery of a settled key with one prepared statement', async () => {
    const ledger = await testLedger(db.url, { poolSize: 1 });
    try {
      const spec = {
        partner: 'acme-pay',
        operation: 'charge',
        key: 'prepared-replay',
        payload: { order: 'prepared-replay' },
        reference: 'prepared-replay',
        amount: '10.00',
        currency: 'BRL',
      };
      const first = await ledger.run(spec, async () => ({ partnerReference: 'NSU-R' }));
      expect(first.replayed).to.equal(false);
      // Every statement the pool is handed from here on: the replay's own, nothing else.
      const sent: unknown[] = [];
      const query = ledger.pool.query.bind(ledger.pool) as (...args: unknown[]) => Promise<unknown>;
      (ledger.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args) => {
        sent.push(args[0]);
        return query(...args);
      };
      let called = false;
      const again = await ledger.run(spec, async () => {
        called = true;
        return {};
      });
      expect(called).to.equal(false);
      expect(again).to.include({ replayed: true, partnerReference: 'NSU-R', status: 'completed' });
      expect(sent).to.have.length(1);
      expect(sent[0]).to.have.property('name', 'intent_ledger_claim_new');
    } finally {
      await ledger.close();
    }
  });

  /**
   * The default claim order (src/ledger/claimOrder.ts) follows what the ledger's recent claims found: after a
   * run of duplicate deliveries a duplicate is one plain read, after a run of new keys a new key is one
   * statement again. Both are observed by the statements the pool is handed.
   */
  it('after a run of duplicates reads a key first, and after a run of new keys claims first again', async () => {
    const ledger = await testLedger(db.url, { poolSize: 2 });
    try {
      const spec = (key: string) => ({
        partner: 'acme-pay',
        operation: 'charge',
        key,
        payload: { order: key },
        reference: key,
        amount: '10.00',
        currency: 'BRL',
      });
      const partner = async () => ({ partnerReference: 'NSU-A' });
      const sent: { name?: string }[] = [];
      const query = ledger.pool.query.bind(ledger.pool) as (...args: unknown[]) => Promise<unknown>;
      (ledger.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args) => {
        sent.push(args[0] as { name?: string });
        return query(...args);
      };
      const namesOf = async (run: () => Promise<unknown>) => {
        sent.length = 0;
        await run();
        return sent.map((config) => config.name);
      };
      await ledger.run(spec('adaptive-settled'), partner);
      // A new key on a fresh ledger: the claim alone, then the completion.
      expect(await namesOf(() => ledger.run(spec('adaptive-new-0'), partner))).to.deep.equal([
        'intent_ledger_claim_new',
        'intent_ledger_complete_running',
      ]);
      for (let i = 0; i < 100; i++) await ledger.run(spec('adaptive-settled'), partner);
      const replay = await namesOf(() => ledger.run(spec('adaptive-settled'), partner));
      expect(replay).to.deep.equal(['intent_ledger_read_key']);
      // A new key while reading first: the read finds nothing and the claim decides.
      expect(await namesOf(() => ledger.run(spec('adaptive-new-1'), partner))).to.deep.equal([
        'intent_ledger_read_key',
        'intent_ledger_claim_new',
        'intent_ledger_complete_running',
      ]);
      for (let i = 0; i < 100; i++) await ledger.run(spec(`adaptive-more-${i}`), partner);
      expect(await namesOf(() => ledger.run(spec('adaptive-settled'), partner))).to.deep.equal([
        'intent_ledger_claim_new',
      ]);
      const rows = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM intents WHERE key LIKE 'adaptive-%' AND status = 'completed' AND attempt = 1`,
      );
      expect(rows.rows[0].n).to.equal('103');
    } finally {
      await ledger.close();
    }
  });

  /**
   * What the read first saves is only a delivery the row alone answers (a settled key, another payload). A
   * duplicate of an intent whose outcome is unknown (a parked message redelivered until the reconciler
   * settles it) or still in flight goes on to the claim and the re-claim in either order, so reading first
   * costs it a round trip more, as it does a new key: measured, a storm of such duplicates ran at 0.63-0.67
   * of the claim-first order's throughput when they counted as duplicates. They must keep the claim first.
   */
  it('keeps claiming first through a run of duplicates that the read cannot answer (outcome unknown)', async () => {
    const ledger = await testLedger(db.url, { poolSize: 2 });
    try {
      const spec = {
        partner: 'acme-pay',
        operation: 'charge',
        key: 'adaptive-unknown',
        payload: { order: 'adaptive-unknown' },
        reference: 'adaptive-unknown',
        amount: '10.00',
        currency: 'BRL',
      };
      const partner = async (): Promise<never> => {
        throw new Error('connection reset');
      };
      const first = await rejectionOf(ledger.run(spec, partner));
      expect(first).to.have.property('code', 'INTENT_OUTCOME_UNKNOWN');
      for (let i = 0; i < 100; i++) await rejectionOf(ledger.run(spec, partner));
      const sent: { name?: string }[] = [];
      const query = ledger.pool.query.bind(ledger.pool) as (...args: unknown[]) => Promise<unknown>;
      (ledger.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args) => {
        sent.push(args[0] as { name?: string });
        return query(...args);
      };
      const redelivered = await rejectionOf(ledger.run(spec, partner));
      expect(redelivered).to.have.property('code', 'INTENT_OUTCOME_UNKNOWN');
      expect(sent.map((config) => config.name)).to.deep.equal([
        'intent_ledger_claim_new',
        'intent_ledger_reclaim',
      ]);
    } finally {
      await ledger.close();
    }
  });

  it('refuses an unknown claimOrder when the ledger is created', async () => {
    const error = await rejectionOf(
      testLedger(db.url, { claimOrder: 'read-later' as unknown as ClaimOrderMode }),
    );
    expect(error).to.be.instanceOf(TypeError);
    expect((error as Error).message).to.equal(
      'claimOrder must be one of adaptive, insert-first, read-first (got read-later)',
    );
  });
});
