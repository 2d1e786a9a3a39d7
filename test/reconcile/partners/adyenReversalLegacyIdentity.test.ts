import { join } from 'node:path';
import { expect } from 'chai';
import adyen from '../../../reconcilers/adyen.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../../src/reports/csvSourceConfig.js';
import { partnerName } from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/adyen/settlement_detail_report_batch_4.csv',
);

/**
 * A reversal's identity now carries the row's own id (`columns.rowId`, Adyen's Modification Reference). One
 * stored before that, under `reversal:<Psp Reference>|<Merchant Reference>#<n>`, must still be recognised
 * when its batch is read again after the upgrade: a second copy would show finance the chargeback twice.
 */
describe('shipped partner: adyen, a batch reconciled before reversals carried their own id, read again', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'adyen_legacy',
    reconciler: adyen,
    fixture: FIXTURE,
    currency: 'EUR',
  });

  it('stores none of its reversals a second time', async () => {
    const partner = partnerName('adyen-legacy');
    await stuck(partner, 'order-1002', '40.00', '2026-11-30T09:04:50Z');
    const shipped = config(partner);
    const source = shipped.source as CsvSourceConfig;
    const { rowId: _, ...columns } = source.columns;
    const before: ReconcilerConfig = { ...shipped, source: { ...source, columns } };
    const [first] = await reconcile({ pool: fx.sql, reconciler: before, file: FIXTURE });
    expect(first.status, `error: ${first.error}`).to.equal('succeeded');
    const reversals = async () =>
      (
        await fx.sql.query<{ identity: string }>(
          `SELECT identity FROM partner_records WHERE partner = $1 AND kind = 'reversal' ORDER BY id`,
          [partner],
        )
      ).rows.map((row) => row.identity);
    const stored = await reversals();
    expect(stored.length).to.be.greaterThan(0);
    expect(stored.every((identity) => !identity.includes('|id:'))).to.equal(true);

    const [again] = await reconcile({ pool: fx.sql, reconciler: shipped, file: FIXTURE });
    expect(again.status, `error: ${again.error}`).to.equal('succeeded');
    expect(await reversals()).to.deep.equal(stored);
  });
});
