import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import { IntentOutcomeUnknownError, LateCompletionError } from '../../src/shared/errors/index.js';
import { LeaseEndingError } from '../../src/shared/errors/LeaseEndingError.js';
import type { CallResult } from '../../src/shared/types.js';
import { deferred, rejectionOf, specFactory, sqlPool, waitFor } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger, testLedger } from '../support/testLedger.js';

const spec = specFactory('lease');
const LEASE_MS = 1_000;
/** The default margin for a 1 s lease: 10%. */
const MARGIN_MS = 100;

describe('lease: a call never outlives its lease, and late answers are not lost', function () {
  this.timeout(15_000);
  const db = useFreshDatabase('lease');
  let ledger: Ledger;
  let sql: Pool;
  let log: { level: string; object: object; message: string }[];
  before(async () => {
    log = [];
    ledger = await testLedger(db.url, { leaseMs: LEASE_MS, logger: capturingLogger(log) });
    sql = sqlPool(db.url);
  });
  after(async () => {
    await ledger?.close();
    await sql?.end();
  });

  /** Simulates the reconciler proving "not executed" for an intent whose lease ended (the SQL it would run). */
  async function reconcileAsNotExecuted(intentId: string): Promise<void> {
    await sql.query(
      `WITH i AS (
         UPDATE intents SET status = 'not_executed', settled_at = now(), updated_at = now(), resolved_by = 'reconciler'
          WHERE id = $1 RETURNING id, attempt, owner, attempt_started_at, lease_expires_at)
       INSERT INTO intent_attempts AS a (intent_id, attempt, owner, started_at, lease_expires_at, resolution,
                                         resolved_by, resolved_at)
       SELECT id, attempt, owner, attempt_started_at, lease_expires_at, 'not_executed', 'reconciler', now() FROM i
       ON CONFLICT (intent_id, attempt) DO UPDATE
          SET resolution = EXCLUDED.resolution, resolved_by = EXCLUDED.resolved_by, resolved_at = EXCLUDED.resolved_at`,
      [intentId],
    );
  }

  async function discrepanciesOf(intentId: string) {
    const found = await sql.query(
      `SELECT id, kind, status, attempt, partner, reference, partner_reference, amount_at_risk::text AS amount, currency,
              dedupe_key, details FROM discrepancies WHERE intent_id = $1 ORDER BY id`,
      [intentId],
    );
    const history = await sql.query(
      `SELECT h.from_status, h.to_status, h.actor FROM discrepancy_history h JOIN discrepancies d ON d.id = h.discrepancy_id
        WHERE d.intent_id = $1 ORDER BY h.id`,
      [intentId],
    );
    return { found: found.rows, history: history.rows };
  }

  it('a callback that honours the signal is aborted before the lease ends (per PostgreSQL) and the intent ends unknown', async () => {
    const s = spec();
    let abortedAt = 0;
    let reason: unknown;
    let leaseExpiresAt: Date | undefined;
    const error = await rejectionOf(
      ledger.run(s, async ({ intentId, signal }) => {
        const lease = await sql.query('SELECT lease_expires_at FROM intents WHERE id = $1', [intentId]);
        leaseExpiresAt = lease.rows[0].lease_expires_at;
        await new Promise<void>((_, reject) =>
          signal.addEventListener(
            'abort',
            () => {
              abortedAt = Date.now();
              reason = signal.reason;
              reject(signal.reason);
            },
            { once: true },
          ),
        );
        return {};
      }),
    );
    expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(error).to.include({ code: 'INTENT_OUTCOME_UNKNOWN', attempt: 1 });
    expect(reason).to.be.instanceOf(LeaseEndingError);
    expect(reason).to.include({ name: 'AbortError' });
    const expiresMs = (leaseExpiresAt as Date).getTime();
    expect(abortedAt).to.be.below(expiresMs);
    // ...but not absurdly early: the call gets its lease minus the margin.
    expect(abortedAt).to.be.at.least(expiresMs - MARGIN_MS - 200);
    // Compared on PostgreSQL's clock, the one the lease is defined on: the outcome was written inside the lease.
    const row = await sql.query(
      `SELECT i.status, i.settled_at, a.outcome, a.ended_at < a.lease_expires_at AS ended_within_lease
         FROM intents i JOIN intent_attempt_history a ON a.intent_id = i.id WHERE i.key = $1`,
      [s.key],
    );
    expect(row.rows).to.deep.equal([
      { status: 'unknown', settled_at: null, outcome: 'unknown', ended_within_lease: true },
    ]);
  });

  it('a callback that ignores the signal: run() gives up at the lease end, then the late success completes the intent', async () => {
    const s = spec();
    const partner = deferred<CallResult>();
    let signalled = false;
    const started = Date.now();
    const error = await rejectionOf(
      ledger.run(s, ({ signal }) => {
        signal.addEventListener('abort', () => {
          signalled = true;
        });
        return partner.promise; // ignores the signal
      }),
    );
    const elapsed = Date.now() - started;
    expect(signalled).to.equal(true);
    expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
    expect((error as Error).message).to.match(/outlived its lease/);
    expect(elapsed).to.be.within(LEASE_MS - MARGIN_MS - 20, LEASE_MS + 100);
    const intent = await ledger.get(s.partner, s.key);
    if (!intent) throw new Error('no intent');
    expect(intent.status).to.equal('unknown');
    expect(
      (
        await sql.query(
          'SELECT ended_at < lease_expires_at AS ok FROM intent_attempt_history WHERE intent_id = $1',
          [intent.id],
        )
      ).rows,
    ).to.deep.equal([{ ok: true }]);

    log.length = 0;
    partner.resolve({ partnerReference: 'NSU-late', response: { late: true } });
    const completed = await waitFor('the late success to be recorded', async () => {
      const now = await ledger.get(s.partner, s.key);
      return now?.status === 'completed' && now;
    });
    expect(completed).to.deep.include({
      status: 'completed',
      attempt: 1,
      partnerReference: 'NSU-late',
      response: { late: true },
      resolvedBy: 'caller',
    });
    expect(completed.attempts.map((a) => [a.attempt, a.outcome, a.partnerReference])).to.deep.equal([
      [1, 'completed', 'NSU-late'],
    ]);
    expect((await discrepanciesOf(intent.id)).found).to.deep.equal([]);
    expect(log.map((e) => [e.level, e.message])).to.deep.include([
      'warn',
      'late answer recorded after abort',
    ]);
    // And it replays like any completion.
    const replay = await ledger.run(s, async () => ({ partnerReference: 'must-not-be-called' }));
    expect(replay).to.include({ replayed: true, partnerReference: 'NSU-late' });
  });

  it('a late failure after the lease changes nothing: the intent stays unknown', async () => {
    const s = spec();
    const partner = deferred<CallResult>();
    expect(await rejectionOf(ledger.run(s, () => partner.promise))).to.be.instanceOf(
      IntentOutcomeUnknownError,
    );
    partner.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    await new Promise((resolve) => setImmediate(resolve));
    const intent = await ledger.get(s.partner, s.key);
    expect(intent?.status).to.equal('unknown');
    expect(intent?.attempts.map((a) => a.outcome)).to.deep.equal(['unknown']);
  });

  it('a late success after the reconciler settled the intent otherwise becomes ONE late_completion discrepancy, never an overwrite', async () => {
    const s = spec();
    const partner = deferred<CallResult>();
    expect(await rejectionOf(ledger.run(s, () => partner.promise))).to.be.instanceOf(
      IntentOutcomeUnknownError,
    );
    const before = await ledger.get(s.partner, s.key);
    if (!before) throw new Error('no intent');
    await reconcileAsNotExecuted(before.id);
    // The next delivery retries (attempt 2) and succeeds.
    const second = await ledger.run(s, async ({ attempt }) => ({
      partnerReference: `NSU-attempt-${attempt}`,
    }));
    expect(second).to.include({ attempt: 2, replayed: false, partnerReference: 'NSU-attempt-2' });
    const settled = await ledger.get(s.partner, s.key);

    log.length = 0;
    partner.resolve({ partnerReference: 'NSU-attempt-1', response: { late: 1 } });
    const raised = await waitFor('the late completion discrepancy', async () => {
      const d = await discrepanciesOf(before.id);
      return d.found.length > 0 && d;
    });
    expect(raised.found).to.have.length(1);
    expect(raised.found[0]).to.deep.include({
      kind: 'late_completion',
      status: 'open',
      attempt: 1,
      partner: 'acme-pay',
      reference: s.reference,
      partner_reference: 'NSU-attempt-1',
      amount: '10.00',
      currency: 'BRL',
      dedupe_key: `late_completion:${before.id}:1`,
    });
    expect(raised.found[0].details).to.deep.equal({
      lateAttempt: 1,
      settledStatus: 'completed',
      settledAttempt: 2,
      corrected: false,
      response: { late: 1 },
    });
    expect(raised.history).to.deep.equal([{ from_status: null, to_status: 'open', actor: 'ledger' }]);

    // The settled intent is untouched; the late answer is kept on attempt 1.
    const after = await ledger.get(s.partner, s.key);
    const { attempts: afterAttempts, ...afterIntent } = after as NonNullable<typeof after>;
    const { attempts: settledAttempts, ...settledIntent } = settled as NonNullable<typeof settled>;
    expect(afterIntent).to.deep.equal(settledIntent);
    expect(afterAttempts[1]).to.deep.equal(settledAttempts[1]);
    expect(afterAttempts.map((a) => [a.attempt, a.outcome, a.partnerReference, a.resolution])).to.deep.equal([
      [1, 'completed', 'NSU-attempt-1', 'not_executed'],
      [2, 'completed', 'NSU-attempt-2', null],
    ]);

    // The same late answer reported again (a retry of the caller): LateCompletionError, still one discrepancy.
    for (let i = 0; i < 2; i++) {
      const again = await rejectionOf(ledger.complete(before.id, 1, { partnerReference: 'NSU-attempt-1' }));
      expect(again).to.be.instanceOf(LateCompletionError);
      expect(again).to.include({
        code: 'LATE_COMPLETION',
        attempt: 1,
        discrepancyId: null,
        intentId: before.id,
      });
    }
    const final = await discrepanciesOf(before.id);
    expect(final.found).to.have.length(1);
    expect(final.history).to.have.length(1);
  });

  it('two-phase: complete() after the reconciler proved not_executed corrects the intent to completed, raises one late_completion, and the next delivery replays', async () => {
    const s = spec();
    const claim = await ledger.begin(s);
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await reconcileAsNotExecuted(claim.intentId);

    const first = await rejectionOf(
      ledger.complete(claim.intentId, 1, { partnerReference: 'NSU-X', response: { ok: true } }),
    );
    expect(first).to.be.instanceOf(LateCompletionError);
    expect(first).to.include({ corrected: true });
    expect((first as LateCompletionError).discrepancyId).to.be.a('string');
    const second = await ledger.complete(claim.intentId, 1, {
      partnerReference: 'NSU-X',
      response: { ok: true },
    });
    // Reported again: the intent is completed with the same reference now, so this is a harmless repeat.
    expect(second).to.deep.include({ status: 'completed', partnerReference: 'NSU-X' });

    const raised = await discrepanciesOf(claim.intentId);
    expect(raised.found.map((d) => [d.id, d.kind, d.attempt, d.partner_reference])).to.deep.equal([
      [(first as LateCompletionError).discrepancyId, 'late_completion', 1, 'NSU-X'],
    ]);
    expect(raised.found[0].details).to.deep.include({
      settledStatus: 'not_executed',
      settledAttempt: 1,
      corrected: true,
    });
    expect(raised.history).to.have.length(1);
    const intent = await sql.query(
      'SELECT status, attempt, partner_reference, resolved_by FROM intents WHERE id = $1',
      [claim.intentId],
    );
    expect(intent.rows[0]).to.deep.equal({
      status: 'completed',
      attempt: 1,
      partner_reference: 'NSU-X',
      resolved_by: 'caller:late',
    });
    // The partner executed attempt 1: the next delivery must replay it, never charge again.
    const next = await ledger.begin(s);
    expect(next).to.deep.include({ kind: 'replay' });
  });

  it('a late success after a newer attempt was claimed is raised, and the newer attempt is not overwritten', async () => {
    const s = spec();
    const claim = await ledger.begin(s);
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await reconcileAsNotExecuted(claim.intentId);
    const retry = await ledger.begin(s);
    expect(retry).to.include({ kind: 'claimed', attempt: 2 });
    const late = await rejectionOf(ledger.complete(claim.intentId, 1, { partnerReference: 'NSU-1' }));
    expect(late).to.be.instanceOf(LateCompletionError);
    expect(late).to.include({ corrected: false });
    const intent = await sql.query('SELECT status, attempt, partner_reference FROM intents WHERE id = $1', [
      claim.intentId,
    ]);
    expect(intent.rows[0]).to.deep.equal({ status: 'in_progress', attempt: 2, partner_reference: null });
  });

  it('a lease longer than a timer can count (30 days) does not abort the call at once', async () => {
    const long = await testLedger(db.url, { leaseMs: 30 * 86_400_000 });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const claim = await long.begin(spec());
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(claim.signal.aborted).to.equal(false);
      expect(warnings.map((w) => w.name)).to.not.include('TimeoutOverflowWarning');
      expect(claim.leaseExpiresAt.getTime() - Date.now()).to.be.above(29 * 86_400_000);
    } finally {
      process.off('warning', onWarning);
      await long.close();
    }
  });

  it('close() does not disarm calls still in flight: their signal still fires before the lease ends', async () => {
    const own = await testLedger(db.url, { leaseMs: LEASE_MS });
    const s = spec();
    const started = deferred();
    let abortedAt = 0;
    let leaseExpiresAt = 0;
    const running = rejectionOf(
      own.run(s, async ({ intentId, signal }) => {
        leaseExpiresAt = (
          await sql.query('SELECT lease_expires_at FROM intents WHERE id = $1', [intentId])
        ).rows[0].lease_expires_at.getTime();
        started.resolve();
        await new Promise<void>((_, reject) =>
          signal.addEventListener(
            'abort',
            () => {
              abortedAt = Date.now();
              reject(signal.reason);
            },
            { once: true },
          ),
        );
        return {};
      }),
    );
    await started.promise;
    await own.close();
    const outcome = await Promise.race([
      running,
      new Promise((resolve) => setTimeout(() => resolve('still running'), LEASE_MS + 500)),
    ]);
    expect(outcome).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(abortedAt).to.be.above(0);
    expect(abortedAt).to.be.below(leaseExpiresAt);
  });
});
