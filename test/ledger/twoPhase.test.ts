import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  IntentInFlightError,
  IntentOutcomeUnknownError,
  IntentRejectedError,
  LateCompletionError,
} from '../../src/shared/errors/index.js';
import type { Claim, IntentSpec } from '../../src/shared/types.js';
import { rejectionOf, specFactory, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

const spec = specFactory('2p');

describe('two-phase: begin / complete / reject / notExecuted / unknown, fenced by the attempt number', () => {
  const db = useFreshDatabase('two_phase');
  let ledger: Ledger;
  let sql: Pool;
  before(async () => {
    ledger = await testLedger(db.url);
    sql = sqlPool(db.url);
  });
  after(async () => {
    await ledger?.close();
    await sql?.end();
  });

  async function claim(s: IntentSpec, attempt?: number): Promise<Claim> {
    const begun = await ledger.begin(s);
    if (begun.kind !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(begun)}`);
    if (attempt !== undefined) expect(begun.attempt).to.equal(attempt);
    return begun;
  }

  async function state(intentId: string) {
    const intent = await sql.query(
      'SELECT status, attempt, partner_reference, response, reason, settled_at IS NOT NULL AS settled FROM intents WHERE id = $1',
      [intentId],
    );
    const attempts = await sql.query(
      'SELECT attempt, outcome, partner_reference, ended_at IS NOT NULL AS ended FROM intent_attempt_history WHERE intent_id = $1 ORDER BY attempt',
      [intentId],
    );
    const discrepancies = await sql.query(
      'SELECT kind, attempt FROM discrepancies WHERE intent_id = $1 ORDER BY id',
      [intentId],
    );
    return { intent: intent.rows[0], attempts: attempts.rows, discrepancies: discrepancies.rows };
  }

  async function expire(intentId: string): Promise<void> {
    await sql.query(`UPDATE intents SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [
      intentId,
    ]);
  }

  it('begin claims attempt 1 with the lease PostgreSQL computed; complete records it; begin then replays', async () => {
    const s = spec();
    const c = await claim(s, 1);
    expect(c.key).to.equal(s.key);
    expect(c.signal.aborted).to.equal(false);
    const lease = await sql.query('SELECT lease_expires_at FROM intents WHERE id = $1', [c.intentId]);
    expect(c.leaseExpiresAt.getTime()).to.equal(lease.rows[0].lease_expires_at.getTime());
    expect(await rejectionOf(ledger.begin(s))).to.be.instanceOf(IntentInFlightError);

    const done = await ledger.complete(c.intentId, 1, {
      partnerReference: 'NSU-1',
      response: { a: [1, 'x'] },
    });
    expect(done).to.deep.equal({
      intentId: c.intentId,
      status: 'completed',
      replayed: false,
      attempt: 1,
      partnerReference: 'NSU-1',
      response: { a: [1, 'x'] },
    });
    expect(await ledger.begin(s)).to.deep.equal({ kind: 'replay', result: { ...done, replayed: true } });
    expect(await state(c.intentId)).to.deep.equal({
      intent: {
        status: 'completed',
        attempt: 1,
        partner_reference: 'NSU-1',
        response: { a: [1, 'x'] },
        reason: null,
        settled: true,
      },
      attempts: [{ attempt: 1, outcome: 'completed', partner_reference: 'NSU-1', ended: true }],
      discrepancies: [],
    });
  });

  it('complete() with no result stores nulls and replays nulls', async () => {
    const s = spec();
    const c = await claim(s, 1);
    expect(await ledger.complete(c.intentId, 1)).to.include({
      replayed: false,
      partnerReference: null,
      response: null,
    });
    const replay = await ledger.begin(s);
    expect(replay).to.deep.equal({
      kind: 'replay',
      result: {
        intentId: c.intentId,
        status: 'completed',
        replayed: true,
        attempt: 1,
        partnerReference: null,
        response: null,
      },
    });
  });

  it('complete twice with the same partner reference is idempotent (replayed: true, nothing raised)', async () => {
    const s = spec();
    const c = await claim(s, 1);
    const first = await ledger.complete(c.intentId, 1, { partnerReference: 'NSU-2', response: { n: 1 } });
    const second = await ledger.complete(c.intentId, 1, { partnerReference: 'NSU-2', response: { n: 1 } });
    expect(second).to.deep.equal({ ...first, replayed: true });
    // Without a reference the repeat cannot contradict anything either.
    expect(await ledger.complete(c.intentId, 1)).to.deep.equal({ ...first, replayed: true });
    expect((await state(c.intentId)).discrepancies).to.deep.equal([]);
  });

  it('complete twice with a DIFFERENT partner reference: the first stands, the second is a late completion', async () => {
    const s = spec();
    const c = await claim(s, 1);
    await ledger.complete(c.intentId, 1, { partnerReference: 'NSU-A' });
    const error = await rejectionOf(ledger.complete(c.intentId, 1, { partnerReference: 'NSU-B' }));
    expect(error).to.be.instanceOf(LateCompletionError);
    const after = await state(c.intentId);
    expect(after.intent.partner_reference).to.equal('NSU-A');
    expect(after.attempts).to.deep.equal([
      { attempt: 1, outcome: 'completed', partner_reference: 'NSU-A', ended: true },
    ]);
    expect(after.discrepancies).to.deep.equal([{ kind: 'late_completion', attempt: 1 }]);
  });

  it('reject records the reason and settles; a replay throws the stored rejection; a second reject is stale', async () => {
    const s = spec();
    const c = await claim(s, 1);
    expect(
      await ledger.reject(c.intentId, 1, { message: 'card declined', code: '05', status: 402 }),
    ).to.equal(true);
    expect(await ledger.reject(c.intentId, 1, 'again')).to.equal(false);
    expect(await ledger.notExecuted(c.intentId, 1, 'no')).to.equal(false);
    expect(await ledger.unknown(c.intentId, 1, 'no')).to.equal(false);
    const replay = await rejectionOf(ledger.begin(s));
    expect(replay).to.be.instanceOf(IntentRejectedError);
    expect(replay).to.deep.include({
      replayed: true,
      reason: { message: 'card declined', code: '05', status: 402 },
    });
    expect(await state(c.intentId)).to.deep.equal({
      intent: {
        status: 'rejected',
        attempt: 1,
        partner_reference: null,
        response: null,
        reason: { message: 'card declined', code: '05', status: 402 },
        settled: true,
      },
      attempts: [{ attempt: 1, outcome: 'rejected', partner_reference: null, ended: true }],
      discrepancies: [],
    });
    // A success reported for a rejected intent is exactly what invariant 4 is about.
    expect(
      await rejectionOf(ledger.complete(c.intentId, 1, { partnerReference: 'NSU-surprise' })),
    ).to.be.instanceOf(LateCompletionError);
    expect((await state(c.intentId)).intent.status).to.equal('rejected');
  });

  it('a string rejection reason is stored as { message }', async () => {
    const s = spec();
    const c = await claim(s);
    await ledger.reject(c.intentId, c.attempt, 'insufficient funds');
    const replay = await rejectionOf(ledger.begin(s));
    expect((replay as IntentRejectedError).reason).to.deep.equal({ message: 'insufficient funds' });
  });

  it('notExecuted settles and frees the key: the next begin is attempt 2', async () => {
    const s = spec();
    const c1 = await claim(s, 1);
    expect(await ledger.notExecuted(c1.intentId, 1, 'connection refused')).to.equal(true);
    expect((await state(c1.intentId)).intent).to.include({ status: 'not_executed', settled: true });
    const c2 = await claim(s, 2);
    expect(c2.intentId).to.equal(c1.intentId);
    expect((await state(c1.intentId)).intent).to.include({
      status: 'in_progress',
      settled: false,
      reason: null,
    });
    await ledger.complete(c2.intentId, 2, { partnerReference: 'NSU-2' });
    expect((await state(c1.intentId)).attempts).to.deep.equal([
      { attempt: 1, outcome: 'not_executed', partner_reference: null, ended: true },
      { attempt: 2, outcome: 'completed', partner_reference: 'NSU-2', ended: true },
    ]);
  });

  it("a re-claim starts the new attempt's clock: attempt 2 starts when it is claimed, attempt 1 keeps its start", async () => {
    const s = spec();
    const c1 = await claim(s, 1);
    // Attempt 1 claimed an hour ago, so that a start left unmoved cannot pass for a fresh one.
    await sql.query("UPDATE intents SET attempt_started_at = now() - interval '1 hour' WHERE id = $1", [
      c1.intentId,
    ]);
    expect(await ledger.notExecuted(c1.intentId, 1, 'connection refused')).to.equal(true);
    const before = (await sql.query<{ now: Date }>('SELECT now()')).rows[0].now;
    await claim(s, 2);
    const history = await sql.query<{ attempt: number; fresh: boolean }>(
      `SELECT attempt, started_at >= $2::timestamptz AS fresh FROM intent_attempt_history
        WHERE intent_id = $1 ORDER BY attempt`,
      [c1.intentId, before],
    );
    expect(history.rows).to.deep.equal([
      { attempt: 1, fresh: false },
      { attempt: 2, fresh: true },
    ]);
  });

  it('unknown parks the intent: begin refuses (outcome unknown), a later complete of the same attempt settles it', async () => {
    const s = spec();
    const c = await claim(s, 1);
    expect(await ledger.unknown(c.intentId, 1, 'timeout')).to.equal(true);
    expect(await ledger.unknown(c.intentId, 1, 'timeout')).to.equal(false);
    const refused = await rejectionOf(ledger.begin(s));
    expect(refused).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(refused).to.include({ attempt: 1 });
    // Only completion may settle an unknown attempt (the late truth); reject/notExecuted may not.
    expect(await ledger.notExecuted(c.intentId, 1, 'guess')).to.equal(false);
    expect(await ledger.reject(c.intentId, 1, 'guess')).to.equal(false);
    const late = await ledger.complete(c.intentId, 1, { partnerReference: 'NSU-late' });
    expect(late).to.include({ replayed: false, attempt: 1, partnerReference: 'NSU-late' });
    expect((await state(c.intentId)).attempts).to.deep.equal([
      { attempt: 1, outcome: 'completed', partner_reference: 'NSU-late', ended: true },
    ]);
  });

  describe('fencing: a stale attempt never overwrites a newer one', () => {
    async function twoAttempts() {
      const s = spec();
      const c1 = await claim(s, 1);
      await ledger.notExecuted(c1.intentId, 1, 'refused');
      const c2 = await claim(s, 2);
      return { s, c1, c2 };
    }

    it('stale reject / notExecuted / unknown return false and change nothing', async () => {
      const { c1 } = await twoAttempts();
      const before = await state(c1.intentId);
      expect(await ledger.reject(c1.intentId, 1, 'stale')).to.equal(false);
      expect(await ledger.notExecuted(c1.intentId, 1, 'stale')).to.equal(false);
      expect(await ledger.unknown(c1.intentId, 1, 'stale')).to.equal(false);
      expect(await state(c1.intentId)).to.deep.equal(before);
      expect(before.intent).to.include({ status: 'in_progress', attempt: 2 });
    });

    it('a stale success (attempt 1 while attempt 2 is in flight) is a late completion; attempt 2 still completes', async () => {
      const { c1, c2 } = await twoAttempts();
      const error = await rejectionOf(ledger.complete(c1.intentId, 1, { partnerReference: 'NSU-old' }));
      expect(error).to.be.instanceOf(LateCompletionError);
      expect(error).to.include({ attempt: 1 });
      expect((await state(c1.intentId)).intent).to.include({
        status: 'in_progress',
        attempt: 2,
        partner_reference: null,
      });
      expect(await ledger.complete(c2.intentId, 2, { partnerReference: 'NSU-new' })).to.include({
        replayed: false,
        partnerReference: 'NSU-new',
      });
      const after = await state(c1.intentId);
      expect(after.intent).to.include({ status: 'completed', attempt: 2, partner_reference: 'NSU-new' });
      expect(after.attempts).to.deep.equal([
        { attempt: 1, outcome: 'not_executed', partner_reference: null, ended: true },
        { attempt: 2, outcome: 'completed', partner_reference: 'NSU-new', ended: true },
      ]);
      expect(after.discrepancies).to.deep.equal([{ kind: 'late_completion', attempt: 1 }]);
    });

    it('a stale success after attempt 2 completed, even with the same reference, is a late completion', async () => {
      const { c1, c2 } = await twoAttempts();
      await ledger.complete(c2.intentId, 2, { partnerReference: 'NSU-2' });
      expect(
        await rejectionOf(ledger.complete(c1.intentId, 1, { partnerReference: 'NSU-2' })),
      ).to.be.instanceOf(LateCompletionError);
      expect(await rejectionOf(ledger.complete(c1.intentId, 1))).to.be.instanceOf(LateCompletionError);
      const after = await state(c1.intentId);
      expect(after.intent).to.include({ status: 'completed', attempt: 2, partner_reference: 'NSU-2' });
      expect(after.discrepancies).to.deep.equal([{ kind: 'late_completion', attempt: 1 }]);
    });

    it('a stale worker cannot settle the newer attempt as failed', async () => {
      const { c1, c2 } = await twoAttempts();
      expect(await ledger.unknown(c1.intentId, 1, 'stale timeout')).to.equal(false);
      expect(await ledger.notExecuted(c2.intentId, 2, 'refused')).to.equal(true);
      expect(await ledger.reject(c1.intentId, 1, 'stale')).to.equal(false);
      expect((await state(c1.intentId)).intent).to.include({ status: 'not_executed', attempt: 2 });
    });
  });

  describe('partnerHonoursKey: retrying an unknown attempt with the same key', () => {
    it('unknown is re-claimed as attempt 2 with the same key', async () => {
      const s = spec({ partnerHonoursKey: true });
      const c1 = await claim(s, 1);
      await ledger.unknown(c1.intentId, 1, 'timeout');
      const c2 = await claim(s, 2);
      expect(c2).to.include({ intentId: c1.intentId, key: s.key });
    });

    it('an in_progress intent whose lease ended is re-claimed as attempt 2; a running lease is not', async () => {
      const s = spec({ partnerHonoursKey: true });
      const c1 = await claim(s, 1);
      expect(await rejectionOf(ledger.begin(s))).to.be.instanceOf(IntentInFlightError);
      await expire(c1.intentId);
      await claim(s, 2);
      expect(await rejectionOf(ledger.begin(s))).to.be.instanceOf(IntentInFlightError);
    });

    it('completed and rejected are never re-claimed, honoured key or not', async () => {
      const a = spec({ partnerHonoursKey: true });
      const ca = await claim(a, 1);
      await ledger.complete(ca.intentId, 1, { partnerReference: 'R' });
      expect(await ledger.begin(a)).to.include({ kind: 'replay' });
      const b = spec({ partnerHonoursKey: true });
      const cb = await claim(b, 1);
      await ledger.reject(cb.intentId, 1, 'no');
      expect(await rejectionOf(ledger.begin(b))).to.be.instanceOf(IntentRejectedError);
    });

    it('NOT when the spec says partnerHonoursKey false (or was first claimed without it)', async () => {
      // Stored false, asked with false.
      const s1 = spec();
      const c1 = await claim(s1, 1);
      await ledger.unknown(c1.intentId, 1, 'timeout');
      expect(await rejectionOf(ledger.begin(s1))).to.be.instanceOf(IntentOutcomeUnknownError);
      const s2 = spec();
      const c2 = await claim(s2, 1);
      await expire(c2.intentId);
      expect(await rejectionOf(ledger.begin(s2))).to.be.instanceOf(IntentOutcomeUnknownError);
      // Stored false (attempt 1 did not pass the key), asked with true: still no blind retry.
      expect(await rejectionOf(ledger.begin({ ...s1, partnerHonoursKey: true }))).to.be.instanceOf(
        IntentOutcomeUnknownError,
      );
      expect(await rejectionOf(ledger.begin({ ...s2, partnerHonoursKey: true }))).to.be.instanceOf(
        IntentOutcomeUnknownError,
      );
      // Stored true, asked with false: the caller no longer passes the key, so no retry either.
      const s3 = spec({ partnerHonoursKey: true });
      const c3 = await claim(s3, 1);
      await ledger.unknown(c3.intentId, 1, 'timeout');
      expect(await rejectionOf(ledger.begin({ ...s3, partnerHonoursKey: false }))).to.be.instanceOf(
        IntentOutcomeUnknownError,
      );
      for (const c of [c1, c2, c3]) expect((await state(c.intentId)).attempts).to.have.length(1);
    });

    it('the answer of the older attempt is the same execution: it completes the intent; the newer one then replays', async () => {
      const s = spec({ partnerHonoursKey: true });
      const c1 = await claim(s, 1);
      await ledger.unknown(c1.intentId, 1, 'timeout');
      const c2 = await claim(s, 2);
      const old = await ledger.complete(c1.intentId, 1, { partnerReference: 'NSU-same' });
      expect(old).to.include({ replayed: false, attempt: 2, partnerReference: 'NSU-same' });
      const newer = await ledger.complete(c2.intentId, 2, { partnerReference: 'NSU-same' });
      expect(newer).to.include({ replayed: true, partnerReference: 'NSU-same' });
      const after = await state(c1.intentId);
      expect(after.discrepancies).to.deep.equal([]);
      // The history says which attempt's answer it was: attempt 2 never answered (it has its own row
      // since the intent row now describes the completion, not attempt 2).
      expect(after.attempts).to.deep.equal([
        { attempt: 1, outcome: 'completed', partner_reference: 'NSU-same', ended: true },
        { attempt: 2, outcome: null, partner_reference: null, ended: false },
      ]);
    });

    it('the older attempt answering while the newer is in progress: the history keeps both as they were', async () => {
      const s = spec({ partnerHonoursKey: true });
      const c1 = await claim(s, 1);
      await expire(c1.intentId); // the worker died mid-call: no outcome, lease over
      const c2 = await claim(s, 2);
      expect((await state(c1.intentId)).attempts).to.deep.equal([
        { attempt: 1, outcome: null, partner_reference: null, ended: false },
        { attempt: 2, outcome: null, partner_reference: null, ended: false },
      ]);
      await ledger.complete(c1.intentId, 1, { partnerReference: 'NSU-1' });
      expect((await state(c2.intentId)).attempts).to.deep.equal([
        { attempt: 1, outcome: 'completed', partner_reference: 'NSU-1', ended: true },
        { attempt: 2, outcome: null, partner_reference: null, ended: false },
      ]);
      const rows = await sql.query(
        'SELECT attempt, started_at, lease_expires_at FROM intent_attempts WHERE intent_id = $1 ORDER BY attempt',
        [c1.intentId],
      );
      // Each row keeps its own attempt's lease: attempt 1's ended, attempt 2's is the one begin() returned.
      expect(rows.rows.map((r) => r.attempt)).to.deep.equal([1, 2]);
      expect(rows.rows[0].lease_expires_at.getTime()).to.be.below(Date.now());
      expect(rows.rows[1].lease_expires_at.getTime()).to.equal(c2.leaseExpiresAt.getTime());
      expect(rows.rows[1].started_at.getTime()).to.be.at.least(rows.rows[0].started_at.getTime());
    });

    it('two different partner references for one honoured key are a late completion (it executed twice)', async () => {
      const s = spec({ partnerHonoursKey: true });
      const c1 = await claim(s, 1);
      await ledger.unknown(c1.intentId, 1, 'timeout');
      const c2 = await claim(s, 2);
      await ledger.complete(c2.intentId, 2, { partnerReference: 'NSU-2' });
      expect(
        await rejectionOf(ledger.complete(c1.intentId, 1, { partnerReference: 'NSU-1' })),
      ).to.be.instanceOf(LateCompletionError);
      const after = await state(c1.intentId);
      expect(after.intent).to.include({ status: 'completed', partner_reference: 'NSU-2' });
      expect(after.discrepancies).to.deep.equal([{ kind: 'late_completion', attempt: 1 }]);
    });
  });
});
