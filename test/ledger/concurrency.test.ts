import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  IntentInFlightError,
  IntentOutcomeUnknownError,
  LateCompletionError,
  PartnerNotExecuted,
} from '../../src/shared/errors/index.js';
import type { CallContext, IntentSpec, RunResult } from '../../src/shared/types.js';
import {
  deferred,
  type Settled,
  settle,
  specFactory,
  sqlPool,
  waitForLeaseEnd,
} from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { CLAIM_ORDERS, testLedger } from '../support/testLedger.js';

const spec = specFactory('conc');
const CONTENDERS = 64;

/** Splits the outcomes of many `run()`s of one key into fresh calls, replays, in-flight refusals and the rest. */
function tally(results: Settled<RunResult>[]) {
  const fresh = results
    .filter((r) => r.ok && !r.value.replayed)
    .map((r) => (r as { value: RunResult }).value);
  const replays = results
    .filter((r) => r.ok && r.value.replayed)
    .map((r) => (r as { value: RunResult }).value);
  const inFlight = results.filter((r) => !r.ok && r.error instanceof IntentInFlightError);
  const other = results
    .filter((r) => !r.ok && !(r.error instanceof IntentInFlightError))
    .map((r) => (r as { error: unknown }).error);
  return { fresh, replays, inFlight, other };
}

// Both claim orders (src/ledger/claimOrder.ts) must give the same outcomes: each case runs under each.
for (const claimOrder of CLAIM_ORDERS) {
  describe(`concurrency: one call in flight per (partner, key) (claim order: ${claimOrder})`, function () {
    this.timeout(20_000);
    const db = useFreshDatabase(`concurrency_${claimOrder.replace('-', '_')}`);
    let single: Ledger;
    let fleet: Ledger[];
    let sql: Pool;
    before(async () => {
      // Pools sized to fit a stock PostgreSQL (max_connections 100, as CI's second pass has): 32 + 4 x 12.
      // Contenders beyond the pool queue for a connection, which only widens the race windows.
      single = await testLedger(db.url, { poolSize: 32, claimOrder });
      // Four instances = four pools = four "processes" racing through PostgreSQL only.
      fleet = await Promise.all(
        [1, 2, 3, 4].map((n) => testLedger(db.url, { poolSize: 12, owner: `worker-${n}`, claimOrder })),
      );
      sql = sqlPool(db.url);
    });
    after(async () => {
      await Promise.all([single, ...fleet].map((ledger) => ledger?.close()));
      await sql?.end();
    });

    async function rowsOf(key: string) {
      const intent = await sql.query(
        'SELECT id, status, attempt, partner_reference FROM intents WHERE key = $1',
        [key],
      );
      const attempts = await sql.query(
        'SELECT a.attempt, a.outcome FROM intent_attempt_history a JOIN intents i ON i.id = a.intent_id WHERE i.key = $1 ORDER BY a.attempt',
        [key],
      );
      return { intents: intent.rows, attempts: attempts.rows };
    }

    /**
     * Launches CONTENDERS `run()`s of one spec over `ledgers` (round robin). The partner holds its answer until
     * every other contender has been answered, so all of them meet the claim while it is in flight.
     */
    async function raceHeldPartner(ledgers: Ledger[], s: IntentSpec) {
      const calls: CallContext[] = [];
      const release = deferred();
      let answered = 0;
      const results = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) =>
          settle(
            ledgers[i % ledgers.length].run(s, async (context) => {
              calls.push(context);
              await release.promise;
              return { partnerReference: 'NSU-held', response: { n: calls.length } };
            }),
          ).then((result) => {
            if (++answered === CONTENDERS - 1) release.resolve();
            return result;
          }),
        ),
      );
      return { calls, results };
    }

    it(`${CONTENDERS} concurrent run()s of one key on one ledger: partner called once, ${CONTENDERS - 1} in-flight refusals`, async () => {
      const s = spec();
      const { calls, results } = await raceHeldPartner([single], s);
      const { fresh, replays, inFlight, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect(calls).to.have.length(1);
      expect(calls[0].attempt).to.equal(1);
      expect(fresh).to.have.length(1);
      expect(fresh[0]).to.deep.include({ attempt: 1, partnerReference: 'NSU-held', response: { n: 1 } });
      expect(replays).to.have.length(0);
      expect(inFlight).to.have.length(CONTENDERS - 1);
      for (const r of inFlight)
        expect((r as { error: IntentInFlightError }).error).to.include({
          intentId: calls[0].intentId,
          code: 'INTENT_IN_FLIGHT',
        });
      expect(await rowsOf(s.key)).to.deep.equal({
        intents: [{ id: calls[0].intentId, status: 'completed', attempt: 1, partner_reference: 'NSU-held' }],
        attempts: [{ attempt: 1, outcome: 'completed' }],
      });
    });

    it(`${CONTENDERS} concurrent run()s of one key with an instant partner: 1 fresh + replays + in-flight = ${CONTENDERS}`, async () => {
      const s = spec();
      let calls = 0;
      const results = await Promise.all(
        Array.from({ length: CONTENDERS }, () =>
          settle(
            single.run(s, async () => ({ partnerReference: `NSU-${++calls}`, response: { call: calls } })),
          ),
        ),
      );
      const { fresh, replays, inFlight, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect(calls).to.equal(1);
      expect(fresh).to.have.length(1);
      expect(fresh.length + replays.length + inFlight.length).to.equal(CONTENDERS);
      for (const replay of replays) {
        expect(replay).to.deep.equal({ ...fresh[0], replayed: true });
      }
      // And afterwards every delivery is a faithful replay.
      const late = await single.run(s, async () => ({ partnerReference: `NSU-${++calls}` }));
      expect(late).to.deep.equal({ ...fresh[0], replayed: true });
      expect(calls).to.equal(1);
    });

    it('two waves: the first meets the call in flight, the second (after it completed) gets exact replays', async () => {
      const s = spec();
      const first = await raceHeldPartner([single], { ...s });
      expect(first.calls).to.have.length(1);
      const secondCalls: number[] = [];
      const second = await Promise.all(
        Array.from({ length: CONTENDERS }, () =>
          settle(single.run(s, async () => ({ partnerReference: `X${secondCalls.push(1)}` }))),
        ),
      );
      const a = tally(first.results);
      const b = tally(second);
      expect([a.fresh.length, a.replays.length, a.inFlight.length, a.other.length]).to.deep.equal([
        1,
        0,
        CONTENDERS - 1,
        0,
      ]);
      expect([b.fresh.length, b.replays.length, b.inFlight.length, b.other.length]).to.deep.equal([
        0,
        CONTENDERS,
        0,
        0,
      ]);
      expect(secondCalls).to.have.length(0);
      for (const replay of b.replays) expect(replay).to.deep.equal({ ...a.fresh[0], replayed: true });
    });

    it(`${CONTENDERS} run()s of one key over 4 ledger instances (4 pools): partner called once`, async () => {
      const s = spec();
      const { calls, results } = await raceHeldPartner(fleet, s);
      const { fresh, replays, inFlight, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect(calls).to.have.length(1);
      expect([fresh.length, replays.length, inFlight.length]).to.deep.equal([1, 0, CONTENDERS - 1]);
      expect((await rowsOf(s.key)).attempts).to.deep.equal([{ attempt: 1, outcome: 'completed' }]);
    });

    it(`${CONTENDERS} run()s of one key over 4 ledger instances with an instant partner: exact split`, async () => {
      const s = spec();
      let calls = 0;
      const results = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) =>
          settle(fleet[i % 4].run(s, async () => ({ partnerReference: `P${++calls}` }))),
        ),
      );
      const { fresh, replays, inFlight, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect(calls).to.equal(1);
      expect(fresh).to.have.length(1);
      expect(replays.length + inFlight.length).to.equal(CONTENDERS - 1);
      for (const replay of replays) expect(replay.partnerReference).to.equal('P1');
    });

    it('re-claiming a not_executed intent under contention: exactly one contender gets attempt 2', async () => {
      const s = spec();
      await settle(
        single.run(s, async () => {
          throw new PartnerNotExecuted('maintenance window');
        }),
      );
      const attempts: number[] = [];
      const release = deferred();
      let answered = 0;
      const results = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) =>
          settle(
            fleet[i % 4].run(s, async ({ attempt }) => {
              attempts.push(attempt);
              await release.promise;
              return { partnerReference: 'NSU-second' };
            }),
          ).then((result) => {
            if (++answered === CONTENDERS - 1) release.resolve();
            return result;
          }),
        ),
      );
      const { fresh, inFlight, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect(attempts).to.deep.equal([2]);
      expect(fresh.map((r) => r.attempt)).to.deep.equal([2]);
      expect(inFlight).to.have.length(CONTENDERS - 1);
      expect((await rowsOf(s.key)).attempts).to.deep.equal([
        { attempt: 1, outcome: 'not_executed' },
        { attempt: 2, outcome: 'completed' },
      ]);
    });

    it('re-claiming an expired lease for a key-honouring partner under contention: exactly one attempt 2', async () => {
      const s = spec({ partnerHonoursKey: true });
      const claim = await single.begin(s);
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      await sql.query(`UPDATE intents SET lease_expires_at = now() - interval '1 ms' WHERE id = $1`, [
        claim.intentId,
      ]);
      await waitForLeaseEnd(sql, claim.intentId);
      const attempts: number[] = [];
      const results = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) =>
          settle(
            fleet[i % 4].begin(s).then((c) => {
              if (c.kind === 'claimed') attempts.push(c.attempt);
              return c;
            }),
          ),
        ),
      );
      expect(attempts).to.deep.equal([2]);
      const refused = results.filter((r) => !r.ok);
      expect(refused).to.have.length(CONTENDERS - 1);
      for (const r of refused) expect((r as { error: unknown }).error).to.be.instanceOf(IntentInFlightError);
      expect((await rowsOf(s.key)).attempts).to.deep.equal([
        { attempt: 1, outcome: null },
        { attempt: 2, outcome: null },
      ]);
    });

    it('an unknown intent of a partner that does not honour keys is never re-claimed, however many contenders', async () => {
      const s = spec();
      await settle(
        single.run(s, async () => {
          throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        }),
      );
      let calls = 0;
      const results = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) =>
          settle(fleet[i % 4].run(s, async () => ({ partnerReference: String(++calls) }))),
        ),
      );
      expect(calls).to.equal(0);
      expect(results.filter((r) => !r.ok && r.error instanceof IntentOutcomeUnknownError)).to.have.length(
        CONTENDERS,
      );
      expect((await rowsOf(s.key)).attempts).to.deep.equal([{ attempt: 1, outcome: 'unknown' }]);
    });

    it('20 concurrent complete() of one attempt with the same reference: one records it, 19 replay, nothing raised', async () => {
      const s = spec();
      const claim = await single.begin(s);
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          settle(
            fleet[i % 4].complete(claim.intentId, 1, {
              partnerReference: 'NSU-once',
              response: { ok: true },
            }),
          ),
        ),
      );
      const { fresh, replays, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect([fresh.length, replays.length]).to.deep.equal([1, 19]);
      const raised = await sql.query('SELECT count(*)::int AS n FROM discrepancies WHERE intent_id = $1', [
        claim.intentId,
      ]);
      expect(raised.rows[0].n).to.equal(0);
    });

    it('20 concurrent complete() of one attempt with 20 different references: one wins, 19 late completions, ONE discrepancy', async () => {
      const s = spec();
      const claim = await single.begin(s);
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          settle(fleet[i % 4].complete(claim.intentId, 1, { partnerReference: `NSU-${i}` })),
        ),
      );
      const { fresh, replays, other } = tally(results);
      expect([fresh.length, replays.length]).to.deep.equal([1, 0]);
      expect(other).to.have.length(19);
      for (const error of other) expect(error).to.be.instanceOf(LateCompletionError);
      expect(other.filter((error) => (error as LateCompletionError).discrepancyId !== null)).to.have.length(
        1,
      );
      const raised = await sql.query(
        `SELECT d.kind, (SELECT count(*)::int FROM discrepancy_history h WHERE h.discrepancy_id = d.id) AS history
           FROM discrepancies d WHERE d.intent_id = $1`,
        [claim.intentId],
      );
      expect(raised.rows).to.deep.equal([{ kind: 'late_completion', history: 1 }]);
      expect((await rowsOf(s.key)).intents[0].partner_reference).to.equal(fresh[0].partnerReference);
    });

    it('200 distinct keys x 3 deliveries each, all at once over 4 instances: exactly 200 partner calls', async () => {
      const keys = Array.from({ length: 200 }, () => spec());
      const deliveries = keys.flatMap((s) => [s, s, s]);
      // Deterministic shuffle, so duplicates of one key arrive on different instances at different moments.
      let seed = 42;
      for (let i = deliveries.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const j = seed % (i + 1);
        [deliveries[i], deliveries[j]] = [deliveries[j], deliveries[i]];
      }
      const callsByKey = new Map<string, number>();
      const results = await Promise.all(
        deliveries.map((s, i) =>
          settle(
            fleet[i % 4].run(s, async ({ key }) => {
              callsByKey.set(key, (callsByKey.get(key) ?? 0) + 1);
              await new Promise((resolve) => setTimeout(resolve, i % 5));
              return { partnerReference: `NSU:${key}` };
            }),
          ),
        ),
      );
      const { fresh, replays, inFlight, other } = tally(results);
      expect(other).to.deep.equal([]);
      expect([...callsByKey.values()].reduce((a, b) => a + b, 0)).to.equal(200);
      expect(callsByKey.size).to.equal(200);
      expect([...callsByKey.values()].every((n) => n === 1)).to.equal(true);
      expect(fresh).to.have.length(200);
      expect(replays.length + inFlight.length).to.equal(400);
      for (const replay of replays) expect(replay.partnerReference).to.match(/^NSU:conc-\d+:charge$/);
      const counts = await sql.query<{ intents: string; completed: string; attempts: string }>(
        `SELECT count(DISTINCT i.id) AS intents,
                count(DISTINCT i.id) FILTER (WHERE i.status = 'completed' AND i.attempt = 1) AS completed,
                count(a.attempt) AS attempts
           FROM intents i LEFT JOIN intent_attempt_history a ON a.intent_id = i.id
          WHERE i.key = ANY ($1)`,
        [keys.map((s) => s.key)],
      );
      expect(counts.rows[0]).to.deep.equal({ intents: '200', completed: '200', attempts: '200' });
    });
  });
}
