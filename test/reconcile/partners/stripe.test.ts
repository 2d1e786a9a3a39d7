import { join } from 'node:path';
import { expect } from 'chai';
import stripe from '../../../reconcilers/stripe.js';
import { getDiscrepancy } from '../../../src/discrepancies/getDiscrepancy.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { discrepanciesOf, intentRow, partnerName } from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/stripe/itemized_payout_reconciliation_po_1QxPayout0000000000001.csv',
);

/**
 * reconcilers/stripe.ts on an Itemized payout reconciliation report (payout_reconciliation.itemized.5) written
 * from Stripe's published columns (test/fixtures/partners/stripe/): charges presented in USD and settled in
 * EUR, a charge made twice, a wrong amount, a charge nobody asked for, a refund, a dispute and a fee.
 */
describe('shipped partner: stripe (Itemized payout reconciliation)', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'stripe',
    reconciler: stripe,
    fixture: FIXTURE,
    currency: 'USD',
  });

  it('compares the presentment amount; refunds and disputes are no executions, fees no orphans', async () => {
    const partner = partnerName('stripe');
    const ids = {
      paid: await stuck(partner, 'order-2001', '25.00', '2026-11-30T10:00:00Z'),
      twice: await stuck(partner, 'order-2002', '40.00', '2026-11-30T10:04:50Z'),
      wrongAmount: await stuck(partner, 'order-2003', '15.00', '2026-11-30T10:10:00Z'),
      notInReport: await stuck(partner, 'order-2004', '10.00', '2026-11-30T10:20:00Z'),
    };
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rowsRead).to.equal(8);
    expect(report.rowsRejected).to.equal(0);
    expect(report.rowsByKind).to.deep.equal({ execution: 5, reversal: 2, failed: 0, ignored: 1 });
    expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });
    expect(await intentRow(fx.sql, ids.paid)).to.deep.include({
      status: 'completed',
      partner_reference: 'ch_1Qx0000000000000000001',
    });
    expect((await intentRow(fx.sql, ids.twice)).status).to.equal('completed');
    expect((await intentRow(fx.sql, ids.wrongAmount)).status).to.equal('completed');
    expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');

    // In USD as presented to the customer: the EUR settlement amounts (gross) would all have been mismatches.
    const flagged = await discrepanciesOf(fx.sql, partner);
    expect(flagged.map((d) => [d.kind, d.intent_id, d.amount_at_risk, d.currency])).to.deep.equal([
      ['amount_mismatch', ids.wrongAmount, '4.99', 'USD'],
      ['duplicate_execution', ids.twice, '40.00', 'USD'],
      ['orphan_partner_record', null, '12.00', 'USD'],
    ]);
    expect(flagged[2].reference).to.equal('order-2999');

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
    // The settlement amount (EUR, after conversion) is kept beside each execution, never compared.
    expect(
      duplicate?.partnerRecords.map((r) => [r.amount, r.currency, r.settlementAmount, r.settlementCurrency]),
    ).to.deep.equal([
      ['40.00', 'USD', '36.96', 'EUR'],
      ['40.00', 'USD', '36.96', 'EUR'],
    ]);
    expect(duplicate?.reversals.map((r) => [r.partnerReference, r.amount, r.currency])).to.deep.equal([
      ['ch_1Qx0000000000000000022', '-40.00', 'USD'],
    ]);
  });
});
