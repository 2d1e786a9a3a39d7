import { expect } from 'chai';
import type { QueryRunner } from 'typeorm';
import { AmbiguousMatch1000000000007 } from '../../migrations/0007-ambiguous-match.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  completedIntent,
  csvReconciler,
  dbNow,
  minutes,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * Migration 0007 rewrites the identities partner records were stored under (and the dedupe keys that carry
 * them). If it got one wrong, re-running a report reconciled before the upgrade would store its rows again
 * as new executions (duplicates) and raise every orphan and mismatch a second time. So: records stored by a
 * run, taken back to their pre-0007 identities by down(), forward again by up(), and the same report re-run
 * finds everything it raised.
 */
describe('migration 0007: partner record identities, back and forth, and re-runs after it', function () {
  this.timeout(60_000);
  const fx = useReconcileFixture('rec_identity_migration');
  const migration = new AmbiguousMatch1000000000007();
  const runner = () =>
    ({ query: async (text: string) => (await fx.sql.query(text)).rows }) as unknown as QueryRunner;

  it('down() gives the old identities and keys back, up() the new ones, and a re-run raises nothing new', async () => {
    const partner = partnerName('identities');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    const stuck = await unknownIntent(fx.ledger, spec(partner, 'order-1'));
    await place(fx.sql, stuck, { startedAt: minutes(base, 60) });
    const paid = await completedIntent(fx.ledger, spec(partner, 'order-2'), 'N-2');
    await place(fx.sql, paid, { startedAt: minutes(base, 90) });
    const noNsu = await unknownIntent(fx.ledger, spec(partner, 'order-3'));
    await place(fx.sql, noNsu, { startedAt: minutes(base, 120) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'order-1', nsu: 'N-1', amount: '10.00', executedAt: minutes(base, 61) },
      { reference: 'order-2', nsu: 'N-2', amount: '12.50', executedAt: minutes(base, 91) },
      { reference: 'order-3', amount: '10.00', executedAt: minutes(base, 121) },
      { reference: 'stranger', nsu: 'N-9', amount: '5.00', executedAt: minutes(base, 200) },
    ]);
    const reconciler = csvReconciler(partner, file, {
      coverage: { from: minutes(base, 0), to: minutes(base, 480) },
    });
    const [first] = await reconcile({ pool: fx.sql, reconciler });
    expect(first.status, first.error ?? '').to.equal('succeeded');
    const identities = async () =>
      (
        await fx.sql.query<{ identity: string }>(
          'SELECT identity FROM partner_records WHERE partner = $1 ORDER BY id',
          [partner],
        )
      ).rows.map((row) => row.identity);
    const keys = async () =>
      (
        await fx.sql.query<{ dedupe_key: string }>(
          'SELECT dedupe_key FROM discrepancies WHERE partner = $1 ORDER BY id',
          [partner],
        )
      ).rows.map((row) => row.dedupe_key);
    const at121 = minutes(base, 121).toISOString();
    const newIdentities = ['N-1|order-1#1', 'N-2|order-2#1', `ref:order-3|${at121}#1`, 'N-9|stranger#1'];
    expect(await identities()).to.deep.equal(newIdentities);
    const newKeys = await keys();
    expect(newKeys).to.include(`amount_mismatch:${paid}:N-2|order-2#1`);
    expect(newKeys).to.include(`orphan_partner_record:${partner}:N-9|stranger#1`);

    await migration.down(runner());
    expect(await identities()).to.deep.equal(['N-1#1', 'N-2#1', `ref:order-3|10|${at121}#1`, 'N-9#1']);
    expect(await keys()).to.include(`amount_mismatch:${paid}:N-2#1`);
    expect(await keys()).to.include(`orphan_partner_record:${partner}:N-9#1`);

    await migration.up(runner());
    expect(await identities()).to.deep.equal(newIdentities);
    expect(await keys()).to.deep.equal(newKeys);

    const before = await snapshot(fx.sql);
    const [again] = await reconcile({ pool: fx.sql, reconciler });
    expect(again.status).to.equal('succeeded');
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(Object.values(again.discrepancies).reduce((a, b) => a + b, 0)).to.equal(0);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });
});
