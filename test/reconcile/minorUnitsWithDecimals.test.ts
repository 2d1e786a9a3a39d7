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
 * A report in minor units has no decimal separator (PayPal: "unsigned, with no ... decimal separator").
 * A row that has one was written in another unit (a spreadsheet's currency format, a partner that moved to
 * major units): `25.00` is 25.00, not 25 minor units. applyAmountConvention refuses only a fraction that is
 * not zero (`10.5`), so `25.00` is read as 0.25 and `2500.00` as 25.00. Under amount matching 0.25 is no near
 * miss of a 25.00 intent: the intent the row executes is proven absent and charged again.
 */
describe('reconcile: an amount with decimals in a report of minor units', () => {
  const fx = useReconcileFixture('rec_minor_decimals');
  let base: Date;
  const at = (m: number) => minutes(base, m).toISOString();

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  it('is rejected, never read as that many minor units: its intent is not proven absent', async () => {
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
