import { join } from 'node:path';
import { expect } from 'chai';
import adyen from '../../../reconcilers/adyen.js';
import { getDiscrepancy } from '../../../src/discrepancies/getDiscrepancy.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../../src/reports/csvSourceConfig.js';
import {
  discrepanciesOf,
  intentRow,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from '../support.js';

const FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/adyen/settlement_detail_report_batch_4.csv',
);

/**
 * reconcilers/adyen.ts on a Settlement details report written from Adyen's published columns
 * (test/fixtures/partners/adyen/): a payment, a payment settled twice, a wrong amount, a payment nobody asked
 * for, a refund and a chargeback, a fee and a payout.
 */
describe('shipped partner: adyen (Settlement details report)', () => {
  const fx = useReconcileFixture('rec_adyen');

  function config(partner: string): ReconcilerConfig {
    return {
      ...adyen,
      partner,
      deadline: '30d',
      source: { ...(adyen.source as CsvSourceConfig), path: FIXTURE },
    };
  }

  async function stuck(partner: string, ref: string, amount: string, at: string): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, ref, { amount, currency: 'EUR' }));
    await place(fx.sql, id, { startedAt: new Date(at) });
    return id;
  }

  it('settles every intent as the report says; refunds and chargebacks are no executions, fees and payouts no orphans', async () => {
    const partner = partnerName('adyen');
    // Creation dates are Amsterdam time (CET, UTC+1 in November): 10:00:12 CET is 09:00:12 UTC.
    const ids = {
      paid: await stuck(partner, 'order-1001', '25.00', '2026-11-30T09:00:00Z'),
      twice: await stuck(partner, 'order-1002', '40.00', '2026-11-30T09:04:50Z'),
      wrongAmount: await stuck(partner, 'order-1003', '15.00', '2026-11-30T09:10:00Z'),
      notInReport: await stuck(partner, 'order-1004', '10.00', '2026-11-30T09:20:00Z'),
      // The night summer time ended: 02:30 happened twice in Amsterdam, first in CEST, then in CET.
      summerTime: await stuck(partner, 'order-1005', '20.00', '2026-10-25T00:29:00Z'),
      winterTime: await stuck(partner, 'order-1006', '30.00', '2026-10-25T01:29:00Z'),
    };
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rowsRead).to.equal(11);
    expect(report.rowsRejected).to.equal(0);
    expect(report.rowsByKind).to.deep.equal({ execution: 7, reversal: 2, failed: 0, ignored: 2 });
    expect(report.resolved).to.deep.equal({ completed: 5, notExecuted: 0 });
    expect(await intentRow(fx.sql, ids.paid)).to.deep.include({
      status: 'completed',
      partner_reference: '8815000000001001',
    });
    expect((await intentRow(fx.sql, ids.twice)).status).to.equal('completed');
    expect((await intentRow(fx.sql, ids.wrongAmount)).status).to.equal('completed');
    // Batch files declare no period: an intent the batch does not show is never proven absent.
    expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');
    expect(report.warnings.some((w) => w.includes('declares no coverage'))).to.equal(true);

    // Each row's TimeZone says which of the two 02:30s it was: an hour apart, not the same instant twice.
    const boundary = await fx.sql.query(
      `SELECT reference, executed_at FROM partner_records WHERE partner = $1 AND reference IN ('order-1005', 'order-1006')
        ORDER BY reference`,
      [partner],
    );
    expect(boundary.rows.map((r) => [r.reference, r.executed_at.toISOString()])).to.deep.equal([
      ['order-1005', '2026-10-25T00:30:00.000Z'],
      ['order-1006', '2026-10-25T01:30:00.000Z'],
    ]);
    expect((await intentRow(fx.sql, ids.summerTime)).status).to.equal('completed');
    expect((await intentRow(fx.sql, ids.winterTime)).status).to.equal('completed');

    const flagged = await discrepanciesOf(fx.sql, partner);
    expect(flagged.map((d) => [d.kind, d.intent_id, d.amount_at_risk, d.currency])).to.deep.equal([
      ['amount_mismatch', ids.wrongAmount, '4.99', 'EUR'],
      ['duplicate_execution', ids.twice, '40.00', 'EUR'],
      ['orphan_partner_record', null, '12.00', 'EUR'],
    ]);
    expect(flagged.every((d) => Number(d.amount_at_risk) >= 0)).to.equal(true);
    expect(flagged[2].reference).to.equal('order-9999');

    // The chargeback of the second settlement is shown beside it on the duplicate.
    const duplicate = await getDiscrepancy(
      fx.sql,
      String(
        (
          await fx.sql.query(
            `SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'duplicate_execution'`,
            [partner],
          )
        ).rows[0].id,
      ),
    );
    expect(duplicate?.reversals.map((r) => [r.partnerReference, r.amount, r.currency])).to.deep.equal([
      ['8815000000001022', '-40.00', 'EUR'],
    ]);
    const refund = await fx.sql.query(
      `SELECT r.intent_id, e.partner_reference FROM partner_records r JOIN partner_records e ON e.id = r.reverses
        WHERE r.partner = $1 AND r.kind = 'reversal' AND r.reference = 'order-1001'`,
      [partner],
    );
    expect(refund.rows).to.deep.equal([{ intent_id: ids.paid, partner_reference: '8815000000001001' }]);
  });
});
