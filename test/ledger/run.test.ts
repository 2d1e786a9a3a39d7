import { expect } from 'chai';
import { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  IdempotencyKeyConflictError,
  IntentInFlightError,
  IntentNotExecutedError,
  IntentOutcomeUnknownError,
  IntentRejectedError,
  PartnerNotExecuted,
  PartnerRejected,
} from '../../src/shared/errors/index.js';
import type { CallContext, IntentSpec } from '../../src/shared/types.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { CLAIM_ORDERS, testLedger } from '../support/testLedger.js';

let keyCounter = 0;
function spec(overrides: Partial<IntentSpec> = {}): IntentSpec {
  return {
    partner: 'acme-pay',
    operation: 'charge',
    key: `order-${++keyCounter}:charge`,
    payload: { card: 'tok_1', amount: '10.00' },
    reference: `order-${keyCounter}`,
    amount: '10.00',
    currency: 'BRL',
    ...overrides,
  };
}

// Every behaviour holds in both claim orders (src/ledger/claimOrder.ts): reading the key first answers a
// settled key (a replay, a stored rejection, a conflict) from a narrower row of its own (readIntentByKey.ts).
for (const claimOrder of CLAIM_ORDERS) {
  describe(`ledger.run: behaviour by what is recorded for (partner, key) (claim order: ${claimOrder})`, () => {
    const db = useFreshDatabase(`run_${claimOrder.replace('-', '_')}`);
    let ledger: Ledger;
    let sql: Pool;
    before(async () => {
      ledger = await testLedger(db.url, { claimOrder });
      sql = new Pool({ connectionString: db.url, max: 2 });
    });
    after(async () => {
      await ledger.close();
      await sql.end();
    });

    it('nothing recorded: claims attempt 1, calls once, records completion with the partner reference', async () => {
      const s = spec();
      const calls: CallContext[] = [];
      const result = await ledger.run(s, async (context) => {
        calls.push(context);
        return { partnerReference: 'NSU-1', response: { approved: true } };
      });
      expect(calls).to.have.length(1);
      expect(calls[0].attempt).to.equal(1);
      expect(calls[0].key).to.equal(s.key);
      expect(calls[0].signal.aborted).to.equal(false);
      expect(result).to.deep.equal({
        intentId: calls[0].intentId,
        status: 'completed',
        replayed: false,
        attempt: 1,
        partnerReference: 'NSU-1',
        response: { approved: true },
      });
      const row = await sql.query(
        'SELECT status, attempt, partner_reference, amount::text, currency, settled_at FROM intents WHERE key = $1',
        [s.key],
      );
      expect(row.rows[0]).to.include({
        status: 'completed',
        attempt: 1,
        partner_reference: 'NSU-1',
        amount: '10.00',
        currency: 'BRL',
      });
      expect(row.rows[0].settled_at).to.be.instanceOf(Date);
    });

    it('completed: replays the stored result and never calls the partner', async () => {
      const s = spec();
      const first = await ledger.run(s, async () => ({
        partnerReference: 'NSU-2',
        response: { approved: true, n: 1 },
      }));
      let called = 0;
      const replay = await ledger.run(s, async () => {
        called++;
        return { partnerReference: 'OTHER' };
      });
      expect(called).to.equal(0);
      expect(replay).to.deep.equal({
        intentId: first.intentId,
        status: 'completed',
        replayed: true,
        attempt: 1,
        partnerReference: 'NSU-2',
        response: { approved: true, n: 1 },
      });
    });

    it('payload key order does not change the fingerprint', async () => {
      const s = spec({ payload: { a: 1, b: { c: 2, d: [1, 2] } } });
      await ledger.run(s, async () => ({ partnerReference: 'X' }));
      const replay = await ledger.run({ ...s, payload: { b: { d: [1, 2], c: 2 }, a: 1 } }, async () => {
        throw new Error('must not be called');
      });
      expect(replay.replayed).to.equal(true);
    });

    it('in_progress with the lease running: IntentInFlightError, partner not called', async () => {
      const s = spec();
      const claim = await ledger.begin(s);
      expect(claim.kind).to.equal('claimed');
      let called = 0;
      const error = await ledger
        .run(s, async () => {
          called++;
          return {};
        })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IntentInFlightError);
      expect(error).to.include({ code: 'INTENT_IN_FLIGHT', partner: 'acme-pay', key: s.key });
      expect((error as IntentInFlightError).leaseExpiresAt.getTime()).to.be.greaterThan(Date.now());
      expect(called).to.equal(0);
    });

    it('in_progress with the lease ended: IntentOutcomeUnknownError, partner not called', async () => {
      const s = spec();
      const claim = await ledger.begin(s);
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      await sql.query(`UPDATE intents SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [
        claim.intentId,
      ]);
      let called = 0;
      const error = await ledger
        .run(s, async () => ({ partnerReference: String(++called) }))
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
      expect(error).to.include({ code: 'INTENT_OUTCOME_UNKNOWN', intentId: claim.intentId });
      expect(called).to.equal(0);
    });

    it('unknown: IntentOutcomeUnknownError, partner not called', async () => {
      const s = spec();
      const failure = await ledger
        .run(s, async () => {
          throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        })
        .catch((e: unknown) => e);
      expect(failure).to.be.instanceOf(IntentOutcomeUnknownError);
      const intent = await ledger.get(s.partner, s.key);
      expect(intent?.status).to.equal('unknown');
      expect(intent?.attempts.map((a) => a.outcome)).to.deep.equal(['unknown']);
      let called = 0;
      const again = await ledger
        .run(s, async () => ({ partnerReference: String(++called) }))
        .catch((e: unknown) => e);
      expect(again).to.be.instanceOf(IntentOutcomeUnknownError);
      expect(called).to.equal(0);
    });

    it('not_executed: claims attempt + 1 and calls again', async () => {
      const s = spec();
      const first = await ledger
        .run(s, async () => {
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
        })
        .catch((e: unknown) => e);
      expect(first).to.be.instanceOf(IntentNotExecutedError);
      expect(first).to.include({ code: 'INTENT_NOT_EXECUTED', attempt: 1 });
      const attempts: number[] = [];
      const result = await ledger.run(s, async ({ attempt }) => {
        attempts.push(attempt);
        return { partnerReference: 'NSU-retry' };
      });
      expect(attempts).to.deep.equal([2]);
      expect(result).to.include({ attempt: 2, replayed: false, partnerReference: 'NSU-retry' });
      const intent = await ledger.get(s.partner, s.key);
      expect(intent?.attempts.map((a) => [a.attempt, a.outcome])).to.deep.equal([
        [1, 'not_executed'],
        [2, 'completed'],
      ]);
      // A redelivery now replays the attempt that executed, not the first one.
      const replay = await ledger.run(s, async () => {
        throw new Error('must not be called');
      });
      expect(replay).to.deep.equal({
        intentId: result.intentId,
        status: 'completed',
        replayed: true,
        attempt: 2,
        partnerReference: 'NSU-retry',
        response: null,
      });
    });

    it('rejected: IntentRejectedError with the stored reason on every replay, partner not called again', async () => {
      const s = spec();
      const first = await ledger
        .run(s, async () => {
          throw new PartnerRejected('card declined', { code: '51', details: { brand: 'visa' } });
        })
        .catch((e: unknown) => e);
      expect(first).to.be.instanceOf(IntentRejectedError);
      expect(first).to.include({ code: 'INTENT_REJECTED', replayed: false });
      let called = 0;
      const replay = await ledger
        .run(s, async () => ({ partnerReference: String(++called) }))
        .catch((e: unknown) => e);
      expect(called).to.equal(0);
      expect(replay).to.be.instanceOf(IntentRejectedError);
      expect(replay).to.include({ replayed: true });
      expect((replay as IntentRejectedError).reason).to.deep.equal({
        message: 'card declined',
        code: '51',
        details: { brand: 'visa' },
      });
    });

    for (const [label, change] of [
      ['payload', { payload: { card: 'tok_2', amount: '10.00' } }],
      ['amount', { amount: '10.01' }],
      ['currency', { currency: 'USD' }],
      ['reference', { reference: 'someone-else' }],
      ['operation', { operation: 'refund' }],
    ] as const) {
      it(`any state, different ${label}: IdempotencyKeyConflictError, partner not called`, async () => {
        const s = spec();
        await ledger.run(s, async () => ({ partnerReference: 'P' }));
        let called = 0;
        const error = await ledger
          .run({ ...s, ...change }, async () => ({ partnerReference: String(++called) }))
          .catch((e: unknown) => e);
        expect(error).to.be.instanceOf(IdempotencyKeyConflictError);
        expect(error).to.include({ code: 'IDEMPOTENCY_KEY_CONFLICT', key: s.key });
        expect(called).to.equal(0);
      });
    }

    it('a conflict is detected while the first call is still in flight', async () => {
      const s = spec();
      await ledger.begin(s);
      const error = await ledger
        .run({ ...s, payload: { other: true } }, async () => ({}))
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IdempotencyKeyConflictError);
    });

    it('the same key under another partner is another intent', async () => {
      const s = spec();
      await ledger.run(s, async () => ({ partnerReference: 'A' }));
      const other = await ledger.run({ ...s, partner: 'globex' }, async () => ({ partnerReference: 'B' }));
      expect(other).to.include({ replayed: false, partnerReference: 'B' });
    });

    it('PartnerNotExecuted from the callback records not_executed', async () => {
      const s = spec();
      const error = await ledger
        .run(s, async () => {
          throw new PartnerNotExecuted('validated locally: partner offline window');
        })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IntentNotExecutedError);
      expect((await ledger.get(s.partner, s.key))?.status).to.equal('not_executed');
    });

    it('refuses money as a number and malformed currencies before touching the database', async () => {
      const bad = spec({ amount: 10 as unknown as string });
      const error = await ledger.run(bad, async () => ({})).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(TypeError);
      expect((error as Error).message).to.match(/amount must be a decimal string/);
      const currency = await ledger.run(spec({ currency: 'brl' }), async () => ({})).catch((e: unknown) => e);
      expect((currency as Error).message).to.match(/currency must be an ISO 4217 code/);
      expect(await ledger.get('acme-pay', bad.key)).to.equal(null);
    });

    it('keeps amounts exact: numeric in, the same decimal string out', async () => {
      // Ten decimals are more than any currency's minor unit: only a partner listed in subMinorUnitPartners
      // may carry them (test/ledger/amounts.test.ts), so this ledger lists one.
      const subMinor = await testLedger(db.url, { subMinorUnitPartners: ['globex-sms'] });
      try {
        const s = spec({ partner: 'globex-sms', amount: '12345678901234567.0123456789', currency: 'USD' });
        await subMinor.run(s, async () => ({}));
        const intent = await subMinor.get(s.partner, s.key);
        expect(intent?.amount).to.equal('12345678901234567.0123456789');
      } finally {
        await subMinor.close();
      }
    });
  });
}
