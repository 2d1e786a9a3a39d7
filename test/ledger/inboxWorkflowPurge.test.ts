import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import { IntentNotExecutedError, PartnerNotExecuted } from '../../src/shared/errors/index.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { rejectionOf, settle, specFactory, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

const spec = specFactory('iwp');

describe('inbox, workflow and purge', () => {
  const db = useFreshDatabase('inbox_workflow_purge');
  let ledger: Ledger;
  let sql: Pool;
  before(async () => {
    ledger = await testLedger(db.url, { poolSize: 30 });
    sql = sqlPool(db.url);
    await sql.query(
      'CREATE TABLE effects (id serial PRIMARY KEY, consumer text NOT NULL, message_id text NOT NULL, note text)',
    );
  });
  after(async () => {
    await ledger?.close();
    await sql?.end();
  });

  async function effectsOf(consumer: string): Promise<string[]> {
    const rows = await sql.query('SELECT message_id, note FROM effects WHERE consumer = $1 ORDER BY id', [
      consumer,
    ]);
    return rows.rows.map((r) => `${r.message_id}:${r.note}`);
  }
  async function inboxOf(consumer: string): Promise<string[]> {
    const rows = await sql.query('SELECT message_id FROM inbox WHERE consumer = $1 ORDER BY message_id', [
      consumer,
    ]);
    return rows.rows.map((r) => r.message_id);
  }

  describe('inbox', () => {
    it('runs the effect once per (consumer, messageId); its writes commit with the inbox row', async () => {
      let runs = 0;
      const effect = (note: string) => async (manager: import('typeorm').EntityManager) => {
        runs++;
        await manager.query('INSERT INTO effects (consumer, message_id, note) VALUES ($1, $2, $3)', [
          'c1',
          'm1',
          note,
        ]);
        return `done-${note}`;
      };
      expect(await ledger.inbox('c1', 'm1', effect('first'))).to.deep.equal({
        duplicate: false,
        result: 'done-first',
      });
      expect(await ledger.inbox('c1', 'm1', effect('second'))).to.deep.equal({ duplicate: true });
      expect(runs).to.equal(1);
      expect(await effectsOf('c1')).to.deep.equal(['m1:first']);
      expect(await inboxOf('c1')).to.deep.equal(['m1']);
      // Another consumer of the same message is another effect.
      expect(await ledger.inbox('c1-other', 'm1', async () => 'x')).to.deep.equal({
        duplicate: false,
        result: 'x',
      });
    });

    it('a throwing effect records nothing (neither its writes nor the inbox row); a retry runs it', async () => {
      const boom = new Error('effect failed half-way');
      const error = await rejectionOf(
        ledger.inbox('c2', 'm1', async (manager) => {
          await manager.query('INSERT INTO effects (consumer, message_id, note) VALUES ($1, $2, $3)', [
            'c2',
            'm1',
            'lost',
          ]);
          throw boom;
        }),
      );
      expect(error).to.equal(boom);
      expect(await effectsOf('c2')).to.deep.equal([]);
      expect(await inboxOf('c2')).to.deep.equal([]);
      const retry = await ledger.inbox('c2', 'm1', async (manager) => {
        await manager.query('INSERT INTO effects (consumer, message_id, note) VALUES ($1, $2, $3)', [
          'c2',
          'm1',
          'kept',
        ]);
        return 1;
      });
      expect(retry).to.deep.equal({ duplicate: false, result: 1 });
      expect(await effectsOf('c2')).to.deep.equal(['m1:kept']);
      expect(await inboxOf('c2')).to.deep.equal(['m1']);
    });

    it('20 concurrent duplicates run the effect once', async () => {
      let runs = 0;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          ledger.inbox('c3', 'm1', async (manager) => {
            runs++;
            // Hold the transaction open so the duplicates really wait on the first one.
            await manager.query('SELECT pg_sleep(0.05)');
            await manager.query('INSERT INTO effects (consumer, message_id, note) VALUES ($1, $2, $3)', [
              'c3',
              'm1',
              `run-${i}`,
            ]);
            return i;
          }),
        ),
      );
      expect(runs).to.equal(1);
      expect(results.filter((r) => !r.duplicate)).to.have.length(1);
      expect(results.filter((r) => r.duplicate)).to.have.length(19);
      expect(await effectsOf('c3')).to.have.length(1);
      expect(await inboxOf('c3')).to.deep.equal(['m1']);
    });

    it('20 concurrent duplicates while the first effect fails: exactly one of the others runs it and commits', async () => {
      let runs = 0;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          settle(
            ledger.inbox('c4', 'm1', async (manager) => {
              const run = ++runs;
              await manager.query('SELECT pg_sleep(0.05)');
              if (run === 1) throw new Error('first effect failed');
              await manager.query('INSERT INTO effects (consumer, message_id, note) VALUES ($1, $2, $3)', [
                'c4',
                'm1',
                `run-${i}`,
              ]);
              return run;
            }),
          ),
        ),
      );
      expect(runs).to.equal(2);
      expect(results.filter((r) => !r.ok)).to.have.length(1);
      expect(
        results
          .filter((r) => r.ok && !r.value.duplicate)
          .map((r) => (r.ok && !r.value.duplicate ? r.value.result : 0)),
      ).to.deep.equal([2]);
      expect(results.filter((r) => r.ok && r.value.duplicate)).to.have.length(18);
      expect(await effectsOf('c4')).to.have.length(1);
    });

    it('refuses empty consumer or message ids', async () => {
      expect(await rejectionOf(ledger.inbox('', 'm', async () => 1))).to.be.instanceOf(TypeError);
      expect(await rejectionOf(ledger.inbox('c', '', async () => 1))).to.be.instanceOf(TypeError);
    });
  });

  describe('workflow', () => {
    it('a crash in step 2 (not executed), then a re-run: step 1 replayed, step 2 called again, step 3 called once', async () => {
      const calls = { reserve: [] as number[], capture: [] as number[], ship: [] as number[] };
      let captureFails = true;
      const base = { operation: 'step', payload: { order: 'o-1' } };
      async function process(key: string) {
        const wf = ledger.workflow(key);
        const r = await wf.step('reserve', { ...base, partner: 'stock' }, async ({ attempt }) => {
          calls.reserve.push(attempt);
          return { partnerReference: 'RES-1' };
        });
        const c = await wf.step(
          'capture',
          { ...base, partner: 'acme-pay', amount: '99.90', currency: 'BRL' },
          async ({ attempt }) => {
            calls.capture.push(attempt);
            if (captureFails) throw new PartnerNotExecuted('gateway refused the connection');
            return { partnerReference: 'CAP-1' };
          },
        );
        const s = await wf.step('ship', { ...base, partner: 'courier' }, async ({ attempt }) => {
          calls.ship.push(attempt);
          return { partnerReference: 'SHIP-1' };
        });
        return [r, c, s];
      }

      const crashed = await rejectionOf(process('order-1'));
      expect(crashed).to.be.instanceOf(IntentNotExecutedError);
      expect(crashed).to.include({ key: 'order-1:capture', attempt: 1 });
      expect(calls).to.deep.equal({ reserve: [1], capture: [1], ship: [] });

      captureFails = false;
      const [r, c, s] = await process('order-1');
      expect(calls).to.deep.equal({ reserve: [1], capture: [1, 2], ship: [1] });
      expect([r.replayed, r.partnerReference]).to.deep.equal([true, 'RES-1']);
      expect([c.replayed, c.attempt, c.partnerReference]).to.deep.equal([false, 2, 'CAP-1']);
      expect([s.replayed, s.partnerReference]).to.deep.equal([false, 'SHIP-1']);

      // A third delivery changes nothing and calls nobody.
      const again = await process('order-1');
      expect(again.map((x) => x.replayed)).to.deep.equal([true, true, true]);
      expect(calls).to.deep.equal({ reserve: [1], capture: [1, 2], ship: [1] });
      const keys = await sql.query(
        `SELECT partner, key, status, attempt FROM intents WHERE key LIKE 'order-1:%' ORDER BY id`,
      );
      expect(keys.rows).to.deep.equal([
        { partner: 'stock', key: 'order-1:reserve', status: 'completed', attempt: 1 },
        { partner: 'acme-pay', key: 'order-1:capture', status: 'completed', attempt: 2 },
        { partner: 'courier', key: 'order-1:ship', status: 'completed', attempt: 1 },
      ]);
    });

    it('refuses empty workflow keys and step names', () => {
      expect(() => ledger.workflow('')).to.throw(TypeError);
      expect(() =>
        ledger.workflow('k').step('', { partner: 'p', operation: 'o', payload: {} }, async () => ({})),
      ).to.throw(TypeError);
    });
  });

  describe('purge', () => {
    const OLD = `now() - interval '2 days'`;

    async function make(
      s: IntentSpec,
      end: 'completed' | 'rejected' | 'not_executed' | 'unknown' | 'in_progress',
    ) {
      const claim = await ledger.begin(s);
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      if (end === 'completed')
        await ledger.complete(claim.intentId, claim.attempt, { partnerReference: s.key });
      if (end === 'rejected') await ledger.reject(claim.intentId, claim.attempt, 'no');
      if (end === 'not_executed') await ledger.notExecuted(claim.intentId, claim.attempt, 'refused');
      if (end === 'unknown') await ledger.unknown(claim.intentId, claim.attempt, 'timeout');
      return claim.intentId;
    }
    async function backdate(ids: string[]): Promise<void> {
      await sql.query(
        `UPDATE intents SET created_at = ${OLD}, updated_at = ${OLD},
                settled_at = CASE WHEN settled_at IS NOT NULL THEN ${OLD} END,
                lease_expires_at = CASE WHEN lease_expires_at IS NOT NULL THEN ${OLD} END
          WHERE id = ANY ($1)`,
        [ids],
      );
      await sql.query(
        `UPDATE intent_attempts SET started_at = ${OLD}, lease_expires_at = ${OLD} WHERE intent_id = ANY ($1)`,
        [ids],
      );
    }

    it('deletes settled intents older than the window with their attempts; keeps in-flight, unknown, recent and disputed ones', async () => {
      await sql.query('DELETE FROM inbox');
      const old: Record<string, string> = {
        completed: await make(spec(), 'completed'),
        rejected: await make(spec(), 'rejected'),
        notExecuted: await make(spec(), 'not_executed'),
        inProgress: await make(spec(), 'in_progress'),
        unknown: await make(spec(), 'unknown'),
        disputed: await make(spec(), 'completed'),
      };
      const recent = {
        completed: await make(spec(), 'completed'),
        rejected: await make(spec(), 'rejected'),
      };
      // A retried intent (attempt 1 not executed, attempt 2 completed) loses both attempts.
      const retried = spec();
      await make(retried, 'not_executed');
      old.completed2 = await make(retried, 'completed');
      await backdate(Object.values(old));
      await sql.query(
        `INSERT INTO discrepancies (kind, partner, intent_id, summary, dedupe_key) VALUES ('missing_at_partner', 'acme-pay', $1, 'x', 'purge-test')`,
        [old.disputed],
      );
      await sql.query(
        `INSERT INTO inbox (consumer, message_id, processed_at) VALUES ('p', 'old-1', ${OLD}), ('p', 'old-2', ${OLD}), ('p', 'new-1', now())`,
      );

      const purged = await ledger.purge({ olderThan: '1d' });
      expect(purged).to.deep.equal({ intents: 4, inbox: 2, interrupted: false });

      const left = await sql.query('SELECT id FROM intents WHERE id = ANY ($1) ORDER BY id', [
        [...Object.values(old), ...Object.values(recent)],
      ]);
      expect(left.rows.map((r) => r.id).sort()).to.deep.equal(
        [old.inProgress, old.unknown, old.disputed, recent.completed, recent.rejected].sort(),
      );
      const orphans = await sql.query('SELECT count(*) FROM intent_attempts WHERE intent_id = ANY ($1)', [
        [old.completed, old.rejected, old.notExecuted, old.completed2],
      ]);
      expect(orphans.rows[0].count).to.equal('0');
      expect(await inboxOf('p')).to.deep.equal(['new-1']);
      // Purging again finds nothing new.
      expect(await ledger.purge({ olderThan: '1d' })).to.deep.equal({
        intents: 0,
        inbox: 0,
        interrupted: false,
      });
    });

    it('counts every batch: exactly a multiple of the batch size, and one more', async () => {
      for (const count of [4, 5]) {
        const ids: string[] = [];
        for (let i = 0; i < count; i++) ids.push(await make(spec(), 'completed'));
        await backdate(ids);
        await sql.query(
          `INSERT INTO inbox (consumer, message_id, processed_at) SELECT 'batch', g::text || '-' || $1, ${OLD} FROM generate_series(1, $1) g`,
          [count],
        );
        expect(await ledger.purge({ olderThan: '1d', batchSize: 2 })).to.deep.equal({
          intents: count,
          inbox: count,
          interrupted: false,
        });
      }
    });

    it('a window of 0 purges everything settled but never the unsettled', async () => {
      const unknown = await make(spec(), 'unknown');
      const inProgress = await make(spec(), 'in_progress');
      const done = await make(spec(), 'completed');
      await ledger.purge({ olderThan: 0 });
      const left = await sql.query('SELECT id FROM intents WHERE id = ANY ($1)', [
        [unknown, inProgress, done],
      ]);
      expect(left.rows.map((r) => r.id).sort()).to.deep.equal([unknown, inProgress].sort());
    });

    it('refuses a malformed window', async () => {
      expect(await rejectionOf(ledger.purge({ olderThan: '1 fortnight' }))).to.be.instanceOf(RangeError);
      expect(await rejectionOf(ledger.purge({ olderThan: -1 }))).to.be.instanceOf(RangeError);
    });
  });
});
