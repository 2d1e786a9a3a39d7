import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { lockPartnerReconciliation } from '../../src/reconcile/sql/lockPartnerReconciliation.js';
import {
  completedIntent,
  csvReconciler,
  dbNow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * What the foreign keys of partner_records guaranteed before migration 0003 replaced them (see there):
 * a deleted intent's records lose their link (ON DELETE SET NULL), a run with records cannot be deleted
 * (NO ACTION), and an intent deleted while a run of its partner is deciding cannot leave a link behind.
 */
describe('reconcile: partner records keep their links consistent', () => {
  const fx = useReconcileFixture('rec_records');

  /** A run over one intent, whose attempt was `completed` by its caller or ended `unknown` (then resolved). */
  async function reconciled(name: string, ended: 'completed' | 'unknown' = 'completed') {
    const partner = partnerName(name);
    const base = minutes(await dbNow(fx.sql), -60);
    const intentSpec = spec(partner, `${partner}-1`);
    const intentId =
      ended === 'completed'
        ? await completedIntent(fx.ledger, intentSpec, 'NSU-1')
        : await unknownIntent(fx.ledger, intentSpec);
    await place(fx.sql, intentId, { startedAt: base });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: `${partner}-1`, nsu: `${partner}-NSU-1`, amount: '10.00', executedAt: minutes(base, 1) },
      {
        reference: `${partner}-orphan`,
        nsu: `${partner}-NSU-2`,
        amount: '5.00',
        executedAt: minutes(base, 2),
      },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    expect(run.status).to.equal('succeeded');
    return { partner, intentId, runId: run.runId! };
  }

  async function links(partner: string) {
    const result = await fx.sql.query<{ reference: string; intent_id: string | null }>(
      'SELECT reference, intent_id FROM partner_records WHERE partner = $1 ORDER BY line',
      [partner],
    );
    return result.rows;
  }

  it('a deleted intent takes its attempts with it and leaves its records without a link', async () => {
    // Unknown, then resolved by the run: its attempt has a row of its own (a completed one is the intent's).
    const { partner, intentId } = await reconciled('unlink', 'unknown');
    const attempts = async (id: string) =>
      (await fx.sql.query('SELECT attempt FROM intent_attempts WHERE intent_id = $1', [id])).rowCount;
    // Another intent's attempts stay.
    const other = await unknownIntent(fx.ledger, spec(partner, `${partner}-other`));
    expect(await attempts(intentId)).to.equal(1);
    expect(await links(partner)).to.deep.equal([
      { reference: `${partner}-1`, intent_id: intentId },
      { reference: `${partner}-orphan`, intent_id: null },
    ]);
    await fx.sql.query('DELETE FROM discrepancies WHERE intent_id = $1', [intentId]);
    await fx.sql.query('DELETE FROM intents WHERE id = $1', [intentId]);
    expect(await attempts(intentId)).to.equal(0);
    expect(await attempts(other)).to.equal(1);
    expect(await links(partner)).to.deep.equal([
      { reference: `${partner}-1`, intent_id: null },
      { reference: `${partner}-orphan`, intent_id: null },
    ]);
  });

  it('a run that has records cannot be deleted', async () => {
    const { runId } = await reconciled('keep-run');
    const error = await fx.sql.query('DELETE FROM reconciliation_runs WHERE id = $1', [runId]).then(
      () => undefined,
      (caught: { code?: string }) => caught,
    );
    expect(error?.code).to.equal('23503');
  });

  it('deleting an intent waits for a run of its partner that is deciding, then clears its links', async () => {
    const { partner, intentId } = await reconciled('wait');
    await fx.sql.query('DELETE FROM discrepancies WHERE intent_id = $1', [intentId]);
    const run = await fx.sql.connect();
    try {
      await run.query('BEGIN');
      await lockPartnerReconciliation(run, partner);
      let deleted = false;
      const deleting = fx.sql.query('DELETE FROM intents WHERE id = $1', [intentId]).then(() => {
        deleted = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(deleted).to.equal(false);
      await run.query('COMMIT');
      await deleting;
    } finally {
      run.release();
    }
    expect((await links(partner))[0]).to.deep.equal({ reference: `${partner}-1`, intent_id: null });
  });
});
