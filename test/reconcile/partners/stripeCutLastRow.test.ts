import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import stripe from '../../../reconcilers/stripe.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { intentRow, partnerName } from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/stripe/itemized_payout_reconciliation_po_1QxPayout0000000000001.csv',
);

/**
 * A Stripe export whose transfer stopped inside its last row. The metadata column our reference is read from
 * comes last in the export (Stripe appends `payment_metadata[...]` columns after its own), so a file cut in
 * it still has every field, and the cut value reads as a shorter reference: `order-2999` cut to `order-29`.
 * Nothing says the last record was ever finished: Stripe ends every record with a line end, and a last record
 * without one may be any prefix of what the partner wrote. It must not be taken as a complete row.
 */
describe('shipped partner: stripe, a file cut inside its last field', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'stripe_cut',
    reconciler: stripe,
    fixture: FIXTURE,
    currency: 'USD',
  });

  it('never completes the intent whose reference is a prefix of the cut row`s', async () => {
    const partner = partnerName('stripe-cut');
    // Stuck, and never charged by Stripe: no row of the payout is its execution.
    const neverCharged = await stuck(partner, 'order-29', '12.00', '2026-11-30T10:14:00Z');
    const lines = readFileSync(FIXTURE, 'utf8').split('\n');
    // The header, four charges, then order-2999's charge (line 6) cut after "order-29", no line end.
    const cutRow = lines[5]!;
    expect(cutRow.endsWith(',order-2999')).to.equal(true);
    const file = join(fx.dir, 'itemized_payout_reconciliation_po_cut.csv');
    writeFileSync(file, `${lines.slice(0, 5).join('\n')}\n${cutRow.slice(0, -2)}`);

    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(
      (await intentRow(fx.sql, neverCharged)).status,
      `the cut row (read as "order-29") completed an intent Stripe never charged; run: ${report.status}, rejected ${report.rowsRejected}`,
    ).to.equal('unknown');
  });
});
