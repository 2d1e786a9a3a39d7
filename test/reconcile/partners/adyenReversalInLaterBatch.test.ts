import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import adyen from '../../../reconcilers/adyen.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { partnerName } from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/adyen/settlement_detail_report_batch_4.csv',
);

/**
 * A reversal is stored under `reversal:<Psp Reference>|<Merchant Reference>#<n>`, `n` counting its
 * occurrences in ITS OWN file, with `ON CONFLICT DO NOTHING`. Adyen's refund and chargeback rows carry the
 * payment's Psp Reference (their own is the Modification Reference), so every later modification of one
 * payment in a later batch has the same identity as the first one: a chargeback in batch 4 and its
 * ChargebackReversed in batch 5, or two partial refunds in two batches. The later one is taken for a re-read
 * of the first and silently never stored: finance sees the chargeback beside the duplicate and never the
 * money coming back. Re-reading one file must store nothing twice; two different rows must both be kept.
 */
describe('shipped partner: adyen, a second modification of one payment in a later batch', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'adyen_later',
    reconciler: adyen,
    fixture: FIXTURE,
    currency: 'EUR',
  });

  it('stores the ChargebackReversed of batch 5 beside the Chargeback of batch 4', async () => {
    const partner = partnerName('adyen-later');
    await stuck(partner, 'order-1002', '40.00', '2026-11-30T09:04:50Z');
    const [first] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(first.status, `error: ${first.error}`).to.equal('succeeded');

    const lines = readFileSync(FIXTURE, 'utf8').split('\n');
    const chargeback = lines.find((line) => line.includes(',Chargeback,'))!;
    // The dispute is won: the 40.00 comes back, with a modification reference of its own.
    const reversed = chargeback
      .replace('2026-11-30 18:00:00', '2026-12-03 11:00:00')
      .replace(',Chargeback,8835000000001022,EUR,40.00,', ',ChargebackReversed,8845000000001022,EUR,,40.00')
      .replace(/,4,/, ',5,');
    expect(reversed).to.contain('ChargebackReversed');
    const batch5 = join(fx.dir, 'settlement_detail_report_batch_5.csv');
    writeFileSync(batch5, `${lines[0]}\n${reversed}\n`);
    const [second] = await reconcile({ pool: fx.sql, reconciler: config(partner, batch5), file: batch5 });
    expect(second.status, `error: ${second.error}`).to.equal('succeeded');
    expect(second.rowsByKind.reversal).to.equal(1);

    const stored = await fx.sql.query<{ amount: string }>(
      `SELECT amount FROM partner_records
        WHERE partner = $1 AND kind = 'reversal' AND partner_reference = '8815000000001022' ORDER BY id`,
      [partner],
    );
    expect(
      stored.rows.map((r) => r.amount),
      'the ChargebackReversed of batch 5 was dropped as a re-read of the Chargeback of batch 4',
    ).to.deep.equal(['-40.00', '40.00']);
  });
});
