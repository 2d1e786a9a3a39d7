import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  IntentInFlightError,
  IntentOutcomeUnknownError,
  LedgerUnavailableError,
  PartnerNotExecuted,
} from '../../src/shared/errors/index.js';
import { rejectionOf, specFactory, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { testLedger } from '../support/testLedger.js';

const spec = specFactory('outage');

describe('database outage: the ledger never calls the partner blind and never invents an outcome', function () {
  this.timeout(15_000);
  const db = useFreshDatabase('outage');
  let proxy: TcpProxy;
  let ledger: Ledger;
  let sql: Pool;
  before(async () => {
    proxy = await startTcpProxy(db.url);
    ledger = await testLedger(proxy.url, { poolSize: 4 });
    sql = sqlPool(db.url);
  });
  afterEach(() => proxy.restore());
  after(async () => {
    await ledger?.close();
    await proxy?.close();
    await sql?.end();
  });

  async function rowsOf(key: string) {
    const intent = await sql.query('SELECT status, attempt, partner_reference FROM intents WHERE key = $1', [
      key,
    ]);
    const attempts = await sql.query(
      'SELECT a.attempt, a.outcome FROM intent_attempt_history a JOIN intents i ON i.id = a.intent_id WHERE i.key = $1 ORDER BY a.attempt',
      [key],
    );
    return { intent: intent.rows, attempts: attempts.rows };
  }

  it('unreachable before the claim: LedgerUnavailableError, partner not called, nothing written; fine once back', async () => {
    const s = spec();
    let calls = 0;
    proxy.cut();
    const error = await rejectionOf(ledger.run(s, async () => ({ partnerReference: String(++calls) })));
    expect(error).to.be.instanceOf(LedgerUnavailableError);
    expect(error).to.include({ code: 'LEDGER_UNAVAILABLE', key: s.key });
    expect((error as Error).message).to.match(/while claiming/);
    expect(calls).to.equal(0);
    expect(await rowsOf(s.key)).to.deep.equal({ intent: [], attempts: [] });
    proxy.restore();
    const result = await ledger.run(s, async () => ({ partnerReference: String(++calls) }));
    expect(result).to.include({ attempt: 1, replayed: false, partnerReference: '1' });
  });

  it('a blip while the partner answers: the completion is retried and recorded once the database is back', async () => {
    const s = spec();
    let calls = 0;
    const result = await ledger.run(s, async () => {
      calls++;
      proxy.cut();
      setTimeout(() => proxy.restore(), 400);
      return { partnerReference: 'NSU-blip', response: { ok: true } };
    });
    expect(calls).to.equal(1);
    expect(result).to.include({ replayed: false, attempt: 1, partnerReference: 'NSU-blip' });
    expect(await rowsOf(s.key)).to.deep.equal({
      intent: [{ status: 'completed', attempt: 1, partner_reference: 'NSU-blip' }],
      attempts: [{ attempt: 1, outcome: 'completed' }],
    });
  });

  it('down for longer than the completion retries: outcome unknown, the intent stays claimed, nobody calls again', async () => {
    const s = spec();
    let calls = 0;
    const started = Date.now();
    const error = await rejectionOf(
      ledger.run(s, async () => {
        calls++;
        proxy.cut();
        return { partnerReference: 'NSU-lost' };
      }),
    );
    const elapsed = Date.now() - started;
    expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
    expect((error as Error).message).to.match(/could not record it/);
    // The consumer parks the message by these: they must be there, in the error and in its message.
    expect(error).to.include({ code: 'INTENT_OUTCOME_UNKNOWN', partner: s.partner, key: s.key });
    expect((error as Error).message).to.match(new RegExp(`^${s.partner}/${s.key}: `));
    // It kept trying for the whole backoff (100 + 250 + 500 + 1000 + 2000 ms) before giving up.
    expect(elapsed).to.be.at.least(3_850);
    proxy.restore();
    expect(await rowsOf(s.key)).to.deep.equal({
      intent: [{ status: 'in_progress', attempt: 1, partner_reference: null }],
      attempts: [{ attempt: 1, outcome: null }],
    });
    expect(
      await rejectionOf(ledger.run(s, async () => ({ partnerReference: String(++calls) }))),
    ).to.be.instanceOf(IntentInFlightError);
    expect(calls).to.equal(1);
  });

  it('down while recording "not executed": the caller is told the ledger failed, the intent is not settled on a guess', async () => {
    const s = spec();
    const error = await rejectionOf(
      ledger.run(s, async () => {
        proxy.cut();
        throw new PartnerNotExecuted('refused');
      }),
    );
    expect(error).to.be.instanceOf(LedgerUnavailableError);
    expect((error as Error).message).to.match(/recording not_executed/);
    expect(error).to.include({ partner: s.partner, key: s.key });
    expect((error as Error).message).not.to.include('undefined');
    proxy.restore();
    expect(await rowsOf(s.key)).to.deep.equal({
      intent: [{ status: 'in_progress', attempt: 1, partner_reference: null }],
      attempts: [{ attempt: 1, outcome: null }],
    });
  });

  it('two-phase: down while complete() records a success: the error still names partner and key', async () => {
    const s = spec();
    const claim = await ledger.begin(s);
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    proxy.cut();
    const error = await rejectionOf(
      ledger.complete(claim.intentId, claim.attempt, { partnerReference: 'NSU-2p' }),
    );
    proxy.restore();
    expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(error).to.include({ partner: s.partner, key: s.key, intentId: claim.intentId });
    expect((error as Error).message).to.match(new RegExp(`^${s.partner}/${s.key}: `));
  });
});
