import { expect } from 'chai';
import { Client } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import { claimNewIntent } from '../../src/ledger/sql/claimIntent.js';
import { IdempotencyKeyConflictError } from '../../src/shared/errors/IdempotencyKeyConflictError.js';
import { IntentInFlightError } from '../../src/shared/errors/IntentInFlightError.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { rejectionOf, waitFor } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { CLAIM_ORDERS, testLedger } from '../support/testLedger.js';

/**
 * The first claim is one statement: an insert that does nothing when the key exists, and a read of the row
 * as of the statement's start. Its insert waits on any transaction that holds the conflicting row (an insert
 * not yet committed, a completion, a reconciliation run settling the intent), and after that wait the read
 * shows the row as it was before it. Each case here makes a second connection hold the row, lets a duplicate
 * delivery wait on it (seen in pg_stat_activity), then commits or rolls back: the duplicate must answer
 * from the row as it is after the wait, and never call the partner twice. Under the read-first claim order
 * (src/ledger/claimOrder.ts) the duplicate's plain read sees the row as it was and, the row not being final,
 * goes on to the same statement, which waits the same way.
 */
// Both claim orders (src/ledger/claimOrder.ts) must give the same outcomes: each case runs under each.
for (const claimOrder of CLAIM_ORDERS) {
  describe(`ledger: a duplicate delivery whose claim waits on another transaction answers from what that one committed (claim order: ${claimOrder})`, function () {
    this.timeout(30_000);
    const db = useFreshDatabase(`claim_waits_${claimOrder.replace('-', '_')}`);
    let ledger: Ledger;
    let holder: Client;
    let watcher: Client;

    before(async () => {
      ledger = await testLedger(db.url, { poolSize: 2, claimOrder });
      holder = new Client({ connectionString: db.url });
      watcher = new Client({ connectionString: db.url });
      await holder.connect();
      await watcher.connect();
    });
    after(async () => {
      await ledger?.close();
      await holder?.end();
      await watcher?.end();
    });

    const spec = (key: string, payload: unknown = { order: 1 }): IntentSpec => ({
      partner: 'acme-pay',
      operation: 'charge',
      key,
      payload,
      reference: key,
      amount: '10.00',
      currency: 'BRL',
    });

    /** The ledger's own fingerprint of `s`: settled under a throwaway key and read back. */
    async function fingerprintOf(s: IntentSpec): Promise<string> {
      const key = `fingerprint-of-${s.key}`;
      await ledger.run({ ...s, key }, async () => ({ partnerReference: 'unused' }));
      const { rows } = await watcher.query<{ fingerprint: string }>(
        'SELECT fingerprint FROM intents WHERE key = $1',
        [key],
      );
      return rows[0]!.fingerprint;
    }

    /** Until the duplicate's claim statement is waiting on a lock. */
    function claimWaiting(): Promise<unknown> {
      return waitFor('the duplicate claim to wait on the held row', async () => {
        const result = await watcher.query(
          `SELECT 1 FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH claimed AS%'`,
        );
        return result.rowCount;
      });
    }

    /** A contender's claim of attempt 1, left uncommitted on `holder`, then `then` in the same transaction. */
    async function contenderClaims(key: string, fingerprint: string, then?: string): Promise<void> {
      await holder.query('BEGIN');
      const first = await claimNewIntent(holder, {
        partner: 'acme-pay',
        operation: 'charge',
        key,
        fingerprint,
        reference: key,
        amount: '10.00',
        currency: 'BRL',
        leaseMs: 30_000,
        owner: 'contender',
        partnerHonoursKey: false,
      });
      expect(first.claimed).to.equal(true);
      if (then) await holder.query(then, [key]);
    }

    it('the statement itself returns no row when the contender commits its insert meanwhile (its snapshot cannot see it)', async () => {
      const s = spec('raw');
      const fingerprint = await fingerprintOf(s);
      await contenderClaims('raw', fingerprint);
      const other = new Client({ connectionString: db.url });
      await other.connect();
      try {
        const pending = claimNewIntent(other, {
          partner: 'acme-pay',
          operation: 'charge',
          key: 'raw',
          fingerprint,
          reference: 'raw',
          amount: '10.00',
          currency: 'BRL',
          leaseMs: 30_000,
          owner: 'duplicate',
          partnerHonoursKey: false,
        });
        await claimWaiting();
        await holder.query('COMMIT');
        expect(await pending).to.deep.equal({ claimed: false, existing: undefined });
      } finally {
        await other.end();
      }
    });

    it('a contender still in flight: the duplicate is refused as in flight and calls nothing', async () => {
      const s = spec('in-flight');
      await contenderClaims('in-flight', await fingerprintOf(s));
      let called = false;
      const pending = rejectionOf(
        ledger.run(s, async () => {
          called = true;
          return {};
        }),
      );
      await claimWaiting();
      await holder.query('COMMIT');
      expect(await pending).to.be.instanceOf(IntentInFlightError);
      expect(called).to.equal(false);
    });

    it('a contender that completed: the duplicate replays its partner reference', async () => {
      const s = spec('completed');
      await contenderClaims(
        'completed',
        await fingerprintOf(s),
        `UPDATE intents SET status = 'completed', partner_reference = 'NSU-C', settled_at = now() WHERE key = $1`,
      );
      let called = false;
      const pending = ledger.run(s, async () => {
        called = true;
        return {};
      });
      await claimWaiting();
      await holder.query('COMMIT');
      expect(await pending).to.include({ replayed: true, partnerReference: 'NSU-C', status: 'completed' });
      expect(called).to.equal(false);
    });

    it('another payload under the key: a key conflict, no call', async () => {
      await contenderClaims('conflict', await fingerprintOf(spec('conflict', { order: 2 })));
      let called = false;
      const pending = rejectionOf(
        ledger.run(spec('conflict'), async () => {
          called = true;
          return {};
        }),
      );
      await claimWaiting();
      await holder.query('COMMIT');
      expect(await pending).to.be.instanceOf(IdempotencyKeyConflictError);
      expect(called).to.equal(false);
    });

    it('a contender that rolled back: the duplicate claims attempt 1 and calls once', async () => {
      const s = spec('rolled-back');
      await contenderClaims('rolled-back', await fingerprintOf(s));
      let calls = 0;
      const pending = ledger.run(s, async () => {
        calls += 1;
        return { partnerReference: 'NSU-RB' };
      });
      await claimWaiting();
      await holder.query('ROLLBACK');
      expect(await pending).to.include({ replayed: false, attempt: 1, partnerReference: 'NSU-RB' });
      expect(calls).to.equal(1);
    });

    it('an in-flight intent whose completion commits while the duplicate waits: replayed, not refused as in flight', async () => {
      const s = spec('completing');
      const first = await ledger.begin(s);
      expect(first.kind).to.equal('claimed');
      await holder.query('BEGIN');
      await holder.query(
        `UPDATE intents SET status = 'completed', partner_reference = 'NSU-M', settled_at = now() WHERE key = $1`,
        ['completing'],
      );
      let called = false;
      const pending = ledger.run(s, async () => {
        called = true;
        return {};
      });
      await claimWaiting();
      await holder.query('COMMIT');
      expect(await pending).to.include({ replayed: true, partnerReference: 'NSU-M', status: 'completed' });
      expect(called).to.equal(false);
    });

    it('an unknown intent a reconciliation run settles while the duplicate waits: replayed, not told to wait for reconciliation', async () => {
      const s = spec('settling');
      const first = await ledger.begin(s);
      if (first.kind !== 'claimed') throw new Error('expected a claim');
      await ledger.unknown(first.intentId, first.attempt, 'timeout');
      // What a run's transaction holds between settling the intent and committing (runOnce.ts).
      await holder.query('BEGIN');
      await holder.query(
        `UPDATE intents SET status = 'completed', partner_reference = 'NSU-R', settled_at = now(),
                resolved_by = 'reconciler' WHERE key = $1`,
        ['settling'],
      );
      let called = false;
      const pending = ledger.run(s, async () => {
        called = true;
        return {};
      });
      await claimWaiting();
      await holder.query('COMMIT');
      expect(await pending).to.include({ replayed: true, partnerReference: 'NSU-R', status: 'completed' });
      expect(called).to.equal(false);
    });
  });
}
