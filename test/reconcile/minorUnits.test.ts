import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import {
  dbNow,
  intentRow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

/**
 * Minor units are read with the digits the runtime's Intl gives a currency, which is CLDR's display data, not
 * ISO 4217: Node 20 gives IDR, HUF, COP and IQD no decimals (ISO 4217: 2, 2, 2, 3). A report in minor units
 * that follows ISO 4217 (1500000 is 15,000.00 IDR) is then read 100 times too large, and under amount
 * matching that row is no near miss of the intent it executes: the intent is proven absent, and a retry
 * charges it again.
 */
describe('reconcile: minor units of currencies whose Intl digits are not ISO 4217', () => {
  const fx = useReconcileFixture('rec_minor');
  let base: Date;
  const at = (m: number) => minutes(base, m).toISOString();

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  it('an IDR row in ISO 4217 minor units never proves its intent absent', async () => {
    const partner = partnerName('minor-idr');
    const rupiah = await unknownIntent(
      fx.ledger,
      spec(partner, 'order-1', { amount: '15000', currency: 'IDR' }),
    );
    await place(fx.sql, rupiah, { startedAt: minutes(base, 60) });
    const real = await unknownIntent(
      fx.ledger,
      spec(partner, 'order-2', { amount: '10.00', currency: 'BRL' }),
    );
    await place(fx.sql, real, { startedAt: minutes(base, 120) });
    const path = join(fx.dir, `${partner}.csv`);
    writeFileSync(
      path,
      [
        'psp,amount,currency,executed_at',
        `PSP-1,1500000,IDR,${at(60)}`,
        `PSP-2,1000,BRL,${at(120)}`,
        '',
      ].join('\n'),
    );
    const config: ReconcilerConfig = {
      partner,
      schedule: '*/15 * * * *',
      stuckAfter: '15m',
      settlementLag: '1h',
      deadline: '3d',
      match: { by: 'amount', amountTolerance: '0.00', timeWindow: '10m' },
      coverage: { from: new Date(at(0)), to: new Date(at(480)) },
      source: {
        type: 'csv',
        path,
        columns: {
          partnerReference: 'psp',
          amount: 'amount',
          currency: 'currency',
          executedAt: 'executed_at',
        },
        amount: { units: 'minor' },
      },
    };
    const [report] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect((await intentRow(fx.sql, real)).status).to.equal('completed');
    expect((await intentRow(fx.sql, rupiah)).status).to.equal('completed');
  });
});
