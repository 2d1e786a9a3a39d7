import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import { IntentInFlightError, IntentOutcomeUnknownError } from '../../src/shared/errors/index.js';
import type { CrashWorkerEvent } from '../support/crashWorker.js';
import { type CrashWorker, startCrashWorker } from '../support/crashWorkerProcess.js';
import { rejectionOf, specFactory, sqlPool, waitForLeaseEnd } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

const spec = specFactory('crash');
const CHILD_LEASE_MS = 1_500;

describe('crash: a worker process killed with SIGKILL in the middle of the partner call', function () {
  this.timeout(20_000);
  const db = useFreshDatabase('crash');
  let ledger: Ledger;
  let sql: Pool;
  const workers: CrashWorker[] = [];
  before(async () => {
    ledger = await testLedger(db.url, { owner: 'survivor' });
    sql = sqlPool(db.url);
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.kill()));
    await ledger?.close();
    await sql?.end();
  });

  async function claimAndKill(s: ReturnType<typeof spec>, owner: string) {
    const worker = startCrashWorker({ databaseUrl: db.url, leaseMs: CHILD_LEASE_MS, owner, spec: s });
    workers.push(worker);
    const calling = (await worker.next('calling')) as Extract<CrashWorkerEvent, { event: 'calling' }>;
    expect(await worker.kill()).to.equal('SIGKILL');
    // Killed before its abort timer fired: it never got to record anything.
    expect(worker.events.map((e) => e.event)).to.deep.equal(['calling']);
    return calling;
  }

  it('while the dead worker lease runs: in flight; after it: outcome unknown; the partner is never called again', async () => {
    const s = spec();
    const calling = await claimAndKill(s, 'doomed-1');
    expect(calling).to.deep.include({ attempt: 1, key: s.key });

    let called = 0;
    const call = async () => ({ partnerReference: `NSU-${++called}` });
    const lease = await sql.query<{ lease_expires_at: Date; running: boolean }>(
      'SELECT lease_expires_at, lease_expires_at > now() AS running FROM intents WHERE id = $1',
      [calling.intentId],
    );
    expect(lease.rows[0].running).to.equal(true);

    const inFlight = await rejectionOf(ledger.run(s, call));
    expect(inFlight).to.be.instanceOf(IntentInFlightError);
    expect(inFlight).to.include({ code: 'INTENT_IN_FLIGHT', intentId: calling.intentId, key: s.key });
    expect((inFlight as IntentInFlightError).leaseExpiresAt.getTime()).to.equal(
      lease.rows[0].lease_expires_at.getTime(),
    );
    expect(await rejectionOf(ledger.begin(s))).to.be.instanceOf(IntentInFlightError);

    await waitForLeaseEnd(sql, calling.intentId);

    const unknown = await rejectionOf(ledger.run(s, call));
    expect(unknown).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(unknown).to.include({ code: 'INTENT_OUTCOME_UNKNOWN', attempt: 1, intentId: calling.intentId });
    expect((unknown as Error).message).to.match(/lease ended without an answer/);
    const twoPhase = await rejectionOf(ledger.begin(s));
    expect(twoPhase).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(called).to.equal(0);

    const intent = await ledger.get(s.partner, s.key);
    expect(intent).to.deep.include({
      id: calling.intentId,
      status: 'in_progress',
      attempt: 1,
      owner: 'doomed-1',
      partnerReference: null,
    });
    expect(intent?.settledAt).to.equal(null);
    expect(intent?.attempts).to.have.length(1);
    expect(intent?.attempts[0]).to.deep.include({
      attempt: 1,
      owner: 'doomed-1',
      outcome: null,
      endedAt: null,
      partnerReference: null,
      resolution: null,
    });
    expect(intent?.attempts[0].leaseExpiresAt.getTime()).to.equal(lease.rows[0].lease_expires_at.getTime());
  });

  it('a partner that honours our key: after the dead worker lease the same key is claimed again as attempt 2', async () => {
    const s = spec({ partnerHonoursKey: true });
    const calling = await claimAndKill(s, 'doomed-2');
    let called = 0;
    const call = async ({ attempt, key }: { attempt: number; key: string }) => {
      called++;
      return { partnerReference: `NSU-${key}-${attempt}` };
    };
    expect(await rejectionOf(ledger.run(s, call))).to.be.instanceOf(IntentInFlightError);
    await waitForLeaseEnd(sql, calling.intentId);
    const result = await ledger.run(s, call);
    expect(called).to.equal(1);
    expect(result).to.deep.equal({
      intentId: calling.intentId,
      status: 'completed',
      replayed: false,
      attempt: 2,
      partnerReference: `NSU-${s.key}-2`,
      response: null,
    });
    const intent = await ledger.get(s.partner, s.key);
    expect(intent?.attempts.map((a) => [a.attempt, a.owner, a.outcome])).to.deep.equal([
      [1, 'doomed-2', null],
      [2, 'survivor', 'completed'],
    ]);
  });
});
