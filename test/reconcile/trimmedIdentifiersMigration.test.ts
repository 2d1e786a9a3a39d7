import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { QueryRunner } from 'typeorm';
import { TrimmedIdentifiers1000000000019 } from '../../migrations/0019-trimmed-identifiers.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  csvReconciler,
  dbNow,
  minutes,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

/**
 * Before identifiers were trimmed, a quoted `"N-1 "` was stored as it was, under the identity `N-1 |order-1#1`.
 * Matched by our reference it was order-1's execution, so after the upgrade a re-run of that file (which now
 * reads `N-1`) would find no record under `N-1|order-1#1`, store it again and count the execution twice.
 * Migration 0019 trims the stored values and gives each record the identity the file now yields, numbering
 * rows whose bases now coincide together again, and carries dedupe keys along. The records are first stored
 * by today's code, then put back the way the old reading stored them.
 */
describe('migration 0019: partner records stored with padded identifiers, then a re-run', function () {
  this.timeout(60_000);
  const fx = useReconcileFixture('rec_trimmed_identifiers');
  const runner = () =>
    ({ query: async (text: string) => (await fx.sql.query(text)).rows }) as unknown as QueryRunner;

  it('rewrites them as the file now reads, so a re-run of the old file stores and raises nothing', async () => {
    const partner = partnerName('trimmed');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    const stuck = await unknownIntent(fx.ledger, spec(partner, 'order-1'));
    await place(fx.sql, stuck, { startedAt: minutes(base, 60) });
    const at = (offset: number) => minutes(base, offset).toISOString();
    // order-1 executed twice under one partner reference, once written with a blank inside its quotes;
    // a stranger's row padded the same way (an orphan).
    const file = join(fx.dir, `${partner}.csv`);
    writeFileSync(
      file,
      [
        'reference,nsu,amount,currency,executed_at',
        `order-1,"N-1 ",10.00,BRL,${at(61)}`,
        `order-1,N-1,10.00,BRL,${at(62)}`,
        `"stranger ",N-9,5.00,BRL,${at(200)}`,
        '',
      ].join('\n'),
    );
    const reconciler = csvReconciler(partner, file, {
      coverage: { from: minutes(base, 0), to: minutes(base, 480) },
    });
    const [first] = await reconcile({ pool: fx.sql, reconciler });
    expect(first.status, first.error ?? '').to.equal('succeeded');
    const records = async () =>
      (
        await fx.sql.query<{ identity: string; reference: string; partner_reference: string }>(
          'SELECT identity, reference, partner_reference FROM partner_records WHERE partner = $1 ORDER BY id',
          [partner],
        )
      ).rows;
    const trimmed = [
      { identity: 'N-1|order-1#1', reference: 'order-1', partner_reference: 'N-1' },
      { identity: 'N-1|order-1#2', reference: 'order-1', partner_reference: 'N-1' },
      { identity: 'N-9|stranger#1', reference: 'stranger', partner_reference: 'N-9' },
    ];
    expect(await records()).to.deep.equal(trimmed);
    const orphanKey = `orphan_partner_record:${partner}:N-9|stranger#1`;
    const keys = async () =>
      (
        await fx.sql.query<{ dedupe_key: string }>(
          'SELECT dedupe_key FROM discrepancies WHERE partner = $1 ORDER BY id',
          [partner],
        )
      ).rows.map((row) => row.dedupe_key);
    expect(await keys()).to.include(orphanKey);

    // As the old reading stored them: the quoted blanks kept, each padded row a base of its own.
    await fx.sql.query(
      `UPDATE partner_records SET partner_reference = 'N-1 ', identity = 'N-1 |order-1#1'
        WHERE partner = $1 AND identity = 'N-1|order-1#1'`,
      [partner],
    );
    await fx.sql.query(
      `UPDATE partner_records SET identity = 'N-1|order-1#1' WHERE partner = $1 AND identity = 'N-1|order-1#2'`,
      [partner],
    );
    await fx.sql.query(
      `UPDATE partner_records SET reference = 'stranger ', identity = 'N-9|stranger #1'
        WHERE partner = $1 AND identity = 'N-9|stranger#1'`,
      [partner],
    );
    await fx.sql.query(`UPDATE discrepancies SET dedupe_key = $2 WHERE partner = $1 AND dedupe_key = $3`, [
      partner,
      `orphan_partner_record:${partner}:N-9|stranger #1`,
      orphanKey,
    ]);

    await new TrimmedIdentifiers1000000000019().up(runner());
    expect(await records()).to.deep.equal(trimmed);
    expect(await keys()).to.include(orphanKey);

    const before = await snapshot(fx.sql);
    const [again] = await reconcile({ pool: fx.sql, reconciler });
    expect(again.status, again.error ?? '').to.equal('succeeded');
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(Object.values(again.discrepancies).reduce((a, b) => a + b, 0)).to.equal(0);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });
});
