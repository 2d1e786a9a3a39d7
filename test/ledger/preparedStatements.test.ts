import { expect } from 'chai';
import { Client } from 'pg';
import { claimNewIntent } from '../../src/ledger/sql/claimIntent.js';
import { completeAttempt } from '../../src/ledger/sql/completeAttempt.js';
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
});
