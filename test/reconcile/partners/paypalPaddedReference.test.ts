import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import paypal from '../../../reconcilers/paypal.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { intentRow, partnerName } from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const FIXTURE = join(__dirname, '../../../../test/fixtures/partners/paypal/STL-20261130.01.009.CSV');
const LINES = readFileSync(FIXTURE, 'utf8').split('\r\n').slice(0, -1);

/**
 * PayPal quotes every varchar field, and fields may hold blanks ("Blanks: Yes"). An Invoice ID written with
 * a blank inside its quotes (`"order-2001 "`) is kept as it is (csv-parse trims unquoted values only, and
 * so does the fast path), so it matches no intent. This is the one shipped file reconciler that proves
 * absence (coverage from the SH record): the intent whose payment the file lists is proven `not_executed`,
 * and the consumer charges it again. The same unquoted (`,order-2001 ,`) is trimmed and matches. A row whose
 * reference is an intent's up to blanks may be that intent's execution: it must never prove it absent.
 */
describe('shipped partner: paypal, an Invoice ID with blanks inside its quotes', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'paypal_padded',
    // The fixture's account (SH position 3): these tests rely on the report proving absence, which it does
    // only for a checked account.
    accounts: ['MERCHANT0001'],
    reconciler: paypal,
    fixture: FIXTURE,
    currency: 'USD',
    deadline: '3650d',
  });

  it('does not prove the intent whose payment the row is not executed', async () => {
    const partner = partnerName('paypal-padded');
    const paid = await stuck(partner, 'order-2001', '25.00', '2026-11-30T17:15:00Z');
    // Another intent the file matches as written, so the report is plausible and proves absence.
    await stuck(partner, 'order-2003', '20.00', '2026-11-30T17:39:50Z');
    // order-2001's payment (line 5) and its refund (line 10) name it with a trailing blank.
    const file = join(fx.dir, 'STL-20261130.31.009.CSV');
    writeFileSync(
      file,
      `${LINES.map((line) => line.replace('"order-2001"', '"order-2001 "')).join('\r\n')}\r\n`,
    );
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(
      (await intentRow(fx.sql, paid)).status,
      'PayPal lists its payment: proving it not executed charges it a second time',
    ).to.be.oneOf(['completed', 'unknown']);
  });
});
