import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { QueryRunner } from 'typeorm';
import { PartnerRecordsIdentityHash1000000000021 } from '../../migrations/0021-partner-records-identity-hash.js';
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
 * Migration 0021 replaces the unique (partner, identity) btree of `partner_records` with a hash index on
 * the identity. Records stored under the old index must be found through the new one, so that a re-run
 * after the upgrade recognises every row it stored before; and `down` must give the unique constraint back,
 * or refuse, changing nothing, when some identity was stored twice meanwhile.
 */
describe('migration 0021: partner records found by identity through a hash index', function () {
  this.timeout(60_000);
  const fx = useReconcileFixture('rec_identity_hash');
  const runner = () =>
    ({ query: async (text: string) => (await fx.sql.query(text)).rows }) as unknown as QueryRunner;
  const migration = new PartnerRecordsIdentityHash1000000000021();

  async function identityIndexes(): Promise<string[]> {
    const result = await fx.sql.query<{ definition: string }>(
      `SELECT pg_get_indexdef(indexrelid) AS definition FROM pg_index
        WHERE indrelid = 'partner_records'::regclass AND pg_get_indexdef(indexrelid) LIKE '%identity%'`,
    );
    return result.rows.map((row) => row.definition.replace(/ ON public\./, ' ON '));
  }

  it('rows stored under the unique btree are known after the upgrade: a re-run stores and raises nothing; down and up again', async () => {
    await migration.down(runner());
    expect(await identityIndexes()).to.deep.equal([
      'CREATE UNIQUE INDEX partner_records_identity_unique ON partner_records USING btree (partner, identity)',
    ]);

    const partner = partnerName('hashed');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    const stuck = await unknownIntent(fx.ledger, spec(partner, 'order-1'));
    await place(fx.sql, stuck, { startedAt: minutes(base, 60) });
    const at = (offset: number) => minutes(base, offset).toISOString();
    // order-1 executed twice under one partner reference (two records, #1 and #2), and a stranger's row.
    const file = join(fx.dir, `${partner}.csv`);
    writeFileSync(
      file,
      [
        'reference,nsu,amount,currency,executed_at',
        `order-1,N-1,10.00,BRL,${at(61)}`,
        `order-1,N-1,10.00,BRL,${at(62)}`,
        `stranger,N-9,5.00,BRL,${at(200)}`,
        '',
      ].join('\n'),
    );
    const reconciler = csvReconciler(partner, file, {
      coverage: { from: minutes(base, 0), to: minutes(base, 480) },
    });
    const [first] = await reconcile({ pool: fx.sql, reconciler });
    expect(first.status, first.error ?? '').to.equal('succeeded');
    expect(first.discrepancies.duplicate_execution).to.equal(1);
    expect(first.discrepancies.orphan_partner_record).to.equal(1);

    await migration.up(runner());
    expect(await identityIndexes()).to.deep.equal([
      'CREATE INDEX partner_records_identity ON partner_records USING hash (identity)',
    ]);

    const before = await snapshot(fx.sql);
    const [again] = await reconcile({ pool: fx.sql, reconciler });
    expect(again.status, again.error ?? '').to.equal('succeeded');
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(Object.values(again.discrepancies).reduce((a, b) => a + b, 0)).to.equal(0);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    const stored = await fx.sql.query<{ identity: string }>(
      'SELECT identity FROM partner_records WHERE partner = $1 ORDER BY id',
      [partner],
    );
    expect(stored.rows.map((row) => row.identity)).to.deep.equal([
      'N-1|order-1#1',
      'N-1|order-1#2',
      'N-9|stranger#1',
    ]);

    // Back and forth over stored rows: the constraint comes back (no identity was stored twice), and goes.
    await migration.down(runner());
    const constraint = await fx.sql.query<{ definition: string }>(
      `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
        WHERE conrelid = 'partner_records'::regclass AND conname = 'partner_records_identity_unique'`,
    );
    expect(constraint.rows).to.deep.equal([{ definition: 'UNIQUE (partner, identity)' }]);
    await migration.up(runner());
    expect(await identityIndexes()).to.deep.equal([
      'CREATE INDEX partner_records_identity ON partner_records USING hash (identity)',
    ]);
  });

  it('going back refuses, changing nothing, when an identity was stored twice', async () => {
    const partner = partnerName('twice');
    const { rows } = await fx.sql.query<{ id: string }>(
      `INSERT INTO reconciliation_runs (partner, trigger, source, status) VALUES ($1, 'manual', 'test', 'succeeded')
       RETURNING id`,
      [partner],
    );
    for (const line of [1, 2]) {
      await fx.sql.query(
        `INSERT INTO partner_records (partner, identity, run_id, line) VALUES ($1, 'N-7|order-7#1', $2, $3)`,
        [partner, rows[0].id, line],
      );
    }
    const client = await fx.sql.connect();
    try {
      await client.query('BEGIN');
      const inTransaction = { query: async (text: string) => (await client.query(text)).rows } as unknown;
      const error = await migration.down(inTransaction as QueryRunner).then(
        () => undefined,
        (caught: unknown) => caught as { code?: string },
      );
      expect(error?.code).to.equal('23505');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await identityIndexes()).to.deep.equal([
      'CREATE INDEX partner_records_identity ON partner_records USING hash (identity)',
    ]);
    await fx.sql.query('DELETE FROM partner_records WHERE partner = $1', [partner]);
  });
});
