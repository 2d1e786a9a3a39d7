import { expect } from 'chai';
import { Client } from 'pg';
import { claimNewIntent } from '../../src/ledger/sql/claimIntent.js';
import { completeAttempt } from '../../src/ledger/sql/completeAttempt.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

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
    const claimed = await claimNewIntent(client, input);
    expect(claimed?.attempt).to.equal(1);
    const done = await completeAttempt(client, {
      intentId: claimed!.id,
      attempt: 1,
      partnerReference: 'NSU-1',
      response: null,
      by: 'caller',
    });
    expect(done).to.deep.equal({ id: claimed!.id, attempt: 1 });
    const prepared = await client.query<{ name: string; statement: string }>(
      'SELECT name, statement FROM pg_prepared_statements ORDER BY name',
    );
    expect(prepared.rows.map((r) => r.name)).to.deep.equal([
      'intent_ledger_claim_new',
      'intent_ledger_complete_running',
    ]);
    expect(prepared.rows[0].statement).to.match(/^INSERT INTO intents /);
    expect(prepared.rows[1].statement).to.match(/^UPDATE intents\s/);
  });
});
