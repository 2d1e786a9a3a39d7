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

/** Amounts a report writes in minor units (amountConvention.ts), read as the currency's ISO 4217 digits say. */
describe('reconcile: amounts in minor units', () => {
  const fx = useReconcileFixture('rec_minor');
  let base: Date;
  const at = (m: number) => minutes(base, m).toISOString();

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  /**
   * Minor units are read with the digits the runtime's Intl gives a currency, which is CLDR's display data, not
   * ISO 4217: Node 20 gives IDR, HUF, COP and IQD no decimals (ISO 4217: 2, 2, 2, 3). A report in minor units
   * that follows ISO 4217 (1500000 is 15,000.00 IDR) is then read 100 times too large, and under amount
   * matching that row is no near miss of the intent it executes: the intent is proven absent, and a retry
   * charges it again.
   */
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

  /**
   * A report in minor units has no decimal separator (PayPal: "unsigned, with no ... decimal separator").
   * A row that has one was written in another unit (a spreadsheet's currency format, a partner that moved to
   * major units): `25.00` is 25.00, not 25 minor units. applyAmountConvention refuses only a fraction that is
   * not zero (`10.5`), so `25.00` is read as 0.25 and `2500.00` as 25.00. Under amount matching 0.25 is no near
   * miss of a 25.00 intent: the intent the row executes is proven absent and charged again.
   */
  it('an amount with decimals in a report of minor units is rejected, never read as that many minor units: its intent is not proven absent', async () => {
    const partner = partnerName('minor-decimals');
    const executed = await unknownIntent(
      fx.ledger,
      spec(partner, 'order-1', { amount: '25.00', currency: 'BRL' }),
    );
    await place(fx.sql, executed, { startedAt: minutes(base, 60) });
    const other = await unknownIntent(
      fx.ledger,
      spec(partner, 'order-2', { amount: '10.00', currency: 'BRL' }),
    );
    await place(fx.sql, other, { startedAt: minutes(base, 120) });
    const path = join(fx.dir, `${partner}.csv`);
    writeFileSync(
      path,
      ['psp,amount,currency,executed_at', `PSP-1,25.00,BRL,${at(60)}`, `PSP-2,1000,BRL,${at(120)}`, ''].join(
        '\n',
      ),
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
    expect((await intentRow(fx.sql, other)).status, `error: ${report.error}`).to.be.oneOf([
      'completed',
      'unknown',
    ]);
    expect(
      (await intentRow(fx.sql, executed)).status,
      `"25.00" in minor units was read as ${JSON.stringify(report.rejected)} / proven absent`,
    ).not.to.equal('not_executed');
  });
});
