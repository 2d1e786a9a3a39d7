import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  csvReconciler,
  dbNow,
  discrepanciesOf,
  intentRow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * A report proves an intent absent (`not_executed`), and a later report lists its execution before anybody
 * claimed it again. The execution is now on record for the very attempt settled as not executed: like a
 * caller's late success (invariant 4, correctNotExecutedIntent.ts), the truth must win while it still can,
 * so the next delivery replays instead of charging a second time. An orphan_partner_record alone leaves the
 * intent claimable.
 */
describe('reconcile: a later report lists an execution of an intent settled not_executed', () => {
  const fx = useReconcileFixture('rec_exec_not_executed');

  it('the intent, not re-claimed yet, is not called again', async () => {
    const partner = partnerName('late-row');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    const coverage = { from: base, to: minutes(base, 400) };
    const seen = await unknownIntent(fx.ledger, spec(partner, 'seen'));
    await place(fx.sql, seen, { startedAt: minutes(base, 30) });
    const missed = spec(partner, 'missed');
    const missedId = await unknownIntent(fx.ledger, missed);
    await place(fx.sql, missedId, { startedAt: minutes(base, 60) });

    const first = writeCsv(fx.dir, `${partner}-1.csv`, [
      { reference: 'seen', nsu: 'L-1', amount: '10.00', executedAt: minutes(base, 31) },
    ]);
    await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, first, { coverage }) });
    expect((await intentRow(fx.sql, missedId)).status).to.equal('not_executed');

    // The partner's corrected report lists it after all.
    const second = writeCsv(fx.dir, `${partner}-2.csv`, [
      { reference: 'seen', nsu: 'L-1', amount: '10.00', executedAt: minutes(base, 31) },
      { reference: 'missed', nsu: 'L-2', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, second, { coverage }) });
    const kinds = (await discrepanciesOf(fx.sql, partner)).map((d) => d.kind);
    // One discrepancy for one problem: the correction is a late_completion (the partner executed an attempt
    // we had settled otherwise); an orphan beside it would put the same row in front of finance twice, and
    // count its amount at risk twice.
    expect(kinds).to.deep.equal(['late_completion']);

    let calls = 0;
    await fx.ledger
      .run(missed, async () => {
        calls++;
        return { partnerReference: 'L-3' };
      })
      .catch(() => undefined);
    expect(calls, 'the partner was called again for an execution on record').to.equal(0);
    expect((await intentRow(fx.sql, missedId)).status).to.equal('completed');
  });
});
