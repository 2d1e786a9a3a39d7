import { expect } from 'chai';
import { raiseDiscrepancy } from '../../src/discrepancies/sql/raiseDiscrepancy.js';
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
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * What the foreign keys of discrepancies and their history guaranteed before migration 0020 replaced them
 * (see there): an intent, a run or a discrepancy that something names cannot be deleted or truncated alone,
 * an intent deleted while a run of its partner is flagging it cannot leave a discrepancy naming nothing, and
 * the ledger cannot raise a discrepancy for an intent that is gone.
 */
describe('reconcile: discrepancies keep their links consistent', () => {
  const fx = useReconcileFixture('rec_links');

  /** A run over one completed intent whose row carries another amount: an amount_mismatch naming it. */
  async function mismatched(name: string) {
    const partner = partnerName(name);
    const base = minutes(await dbNow(fx.sql), -60);
    const intentId = await completedIntent(fx.ledger, spec(partner, `${partner}-1`), 'NSU-1');
    await place(fx.sql, intentId, { startedAt: base });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: `${partner}-1`, nsu: 'NSU-1', amount: '12.00', executedAt: minutes(base, 1) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    expect(run.status).to.equal('succeeded');
    const raised = await fx.sql.query<{ id: string; kind: string; run_id: string }>(
      'SELECT id, kind, run_id FROM discrepancies WHERE intent_id = $1',
      [intentId],
    );
    expect(raised.rows.map((row) => [row.kind, row.run_id])).to.deep.equal([['amount_mismatch', run.runId]]);
    return { partner, intentId, runId: run.runId!, discrepancyId: raised.rows[0].id };
  }

  async function failure(sql: string, params: unknown[]): Promise<{ code?: string; message?: string }> {
    return fx.sql.query(sql, params).then(
      () => ({}),
      (caught: { code?: string; message?: string }) => caught,
    );
  }

  async function count(sql: string, params: unknown[]): Promise<number> {
    return (await fx.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) s`, params)).rows[0].n;
  }

  it('an intent a discrepancy names cannot be deleted, and nothing of it goes', async () => {
    const { intentId } = await mismatched('keep-intent');
    const error = await failure('DELETE FROM intents WHERE id = $1', [intentId]);
    expect(error.code).to.equal('23503');
    expect(error.message).to.contain(`intent ${intentId} has discrepancies`);
    expect(await count('SELECT 1 FROM intents WHERE id = $1', [intentId])).to.equal(1);
    expect(await count('SELECT 1 FROM partner_records WHERE intent_id = $1', [intentId])).to.equal(1);
  });

  it('a run that discrepancies name cannot be deleted, even without records', async () => {
    const { runId } = await mismatched('keep-run');
    // Its records moved to another run: only the discrepancy still names it.
    const other = await fx.sql.query<{ id: string }>(
      `INSERT INTO reconciliation_runs (partner, trigger, source, status)
       SELECT partner, trigger, source, 'succeeded' FROM reconciliation_runs WHERE id = $1 RETURNING id`,
      [runId],
    );
    await fx.sql.query('UPDATE partner_records SET run_id = $2 WHERE run_id = $1', [runId, other.rows[0].id]);
    const error = await failure('DELETE FROM reconciliation_runs WHERE id = $1', [runId]);
    expect(error.code).to.equal('23503');
    expect(error.message).to.contain(`reconciliation run ${runId} has discrepancies`);
  });

  it('a discrepancy with history cannot be deleted', async () => {
    const { discrepancyId } = await mismatched('keep-history');
    const error = await failure('DELETE FROM discrepancies WHERE id = $1', [discrepancyId]);
    expect(error.code).to.equal('23503');
    expect(error.message).to.contain(`discrepancy ${discrepancyId} has history`);
    expect(await count('SELECT 1 FROM discrepancies WHERE id = $1', [discrepancyId])).to.equal(1);
  });

  it('intents, runs or discrepancies cannot be truncated without what names them', async () => {
    await mismatched('truncate');
    for (const table of ['intents', 'reconciliation_runs', 'discrepancies']) {
      // CASCADE still follows the keys that remain (discrepancy_proposals), never these links.
      const error = await failure(`TRUNCATE ${table} CASCADE`, []);
      expect(error.code, table).to.equal('0A000');
      expect(error.message, table).to.contain(`cannot truncate ${table} alone`);
    }
    expect(await count('SELECT 1 FROM discrepancies', [])).to.be.greaterThan(0);
  });

  it('deleting an intent waits for a run of its partner that is flagging it, then refuses', async () => {
    const partner = partnerName('flagging');
    const intentId = await completedIntent(fx.ledger, spec(partner, `${partner}-1`), 'NSU-1');
    const run = await fx.sql.connect();
    let outcome: { code?: string } | undefined;
    try {
      await run.query('BEGIN');
      await lockPartnerReconciliation(run, partner);
      const deleting = failure('DELETE FROM intents WHERE id = $1', [intentId]).then((caught) => {
        outcome = caught;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(outcome).to.equal(undefined);
      // What raiseFlags does, for this intent, while the DELETE waits for the partner's lock.
      await run.query(
        `INSERT INTO discrepancies (kind, partner, intent_id, summary, dedupe_key)
         VALUES ('missing_at_partner', $1, $2::bigint, 'flagged while being deleted', 'links:' || $2::text)`,
        [partner, intentId],
      );
      await run.query('COMMIT');
      await deleting;
    } finally {
      run.release();
    }
    expect(outcome?.code).to.equal('23503');
    expect(await count('SELECT 1 FROM intents WHERE id = $1', [intentId])).to.equal(1);
  });

  it('the ledger cannot raise a discrepancy for an intent that is gone', async () => {
    const partner = partnerName('gone');
    const intentId = await completedIntent(fx.ledger, spec(partner, `${partner}-1`), 'NSU-1');
    await fx.sql.query('DELETE FROM intents WHERE id = $1', [intentId]);
    const raising = raiseDiscrepancy(fx.sql, {
      kind: 'late_completion',
      partner,
      intentId,
      attempt: 1,
      runId: null,
      reference: `${partner}-1`,
      partnerReference: 'NSU-1',
      amountAtRisk: '10.00',
      currency: 'BRL',
      summary: 'late',
      details: {},
      dedupeKey: `late_completion:${intentId}:1`,
      actor: 'ledger',
    });
    const error = await raising.then(
      () => undefined,
      (caught: Error) => caught,
    );
    expect(error?.message).to.equal(`intent ${intentId} does not exist: the discrepancy was not raised`);
    expect(await count('SELECT 1 FROM discrepancies WHERE intent_id = $1', [intentId])).to.equal(0);
    expect(await count('SELECT 1 FROM discrepancy_history h WHERE h.note = $1', ['late'])).to.equal(0);
  });
});
