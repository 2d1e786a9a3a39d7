import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import adyen from '../../../reconcilers/adyen.js';
import paypal from '../../../reconcilers/paypal.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { validateReconciler } from '../../../src/reconcile/validateReconciler.js';
import { intentRow, partnerName } from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const PAYPAL = join(__dirname, '../../../../test/fixtures/partners/paypal/STL-20261130.01.009.CSV');
const ADYEN = join(
  __dirname,
  '../../../../test/fixtures/partners/adyen/settlement_detail_report_batch_4.csv',
);

/**
 * A report of another merchant account (another shop of the company, a sandbox) in the reports folder, with
 * one order number in common with ours, passes the plausibility check; PayPal's proves absence from its SH
 * coverage, so it would prove every other stuck intent of ours not executed. A source states where the
 * account is (PayPal's SH position 3, Adyen's Merchant Account) and reads the expected one from the
 * environment: another account's file fails the run, and without the variable nothing is proven absent.
 */
describe('shipped partners: the merchant account a report is of', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'report_account',
    reconciler: paypal,
    fixture: PAYPAL,
    currency: 'USD',
    deadline: '3650d',
  });

  /** A payment the file lists and one it does not, both started inside its SH period. */
  async function intents(partner: string) {
    const listed = await stuck(partner, 'order-2003', '20.00', '2026-11-30T17:39:50Z');
    const absent = await stuck(partner, 'order-2099', '30.00', '2026-11-30T18:00:00Z');
    return { listed, absent };
  }

  it('PayPal without PAYPAL_ACCOUNT_ID: completes what it shows, proves nothing absent, and says why', async () => {
    const partner = partnerName('paypal-account');
    const { listed, absent } = await intents(partner);
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: PAYPAL, env: {} });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect((await intentRow(fx.sql, listed)).status).to.equal('completed');
    expect((await intentRow(fx.sql, absent)).status).to.equal('unknown');
    expect(report.warnings.join('\n')).to.contain('not checked: set PAYPAL_ACCOUNT_ID');
  });

  it('PayPal with PAYPAL_ACCOUNT_ID set to the report`s account proves the absent one not executed', async () => {
    const partner = partnerName('paypal-account');
    const { absent } = await intents(partner);
    const env = { PAYPAL_ACCOUNT_ID: 'MERCHANT0009, MERCHANT0001' };
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: PAYPAL, env });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.warnings.join('\n')).not.to.contain('not checked');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
  });

  it('PayPal: a file of another account fails the run, naming file, line and field, and applies nothing', async () => {
    const partner = partnerName('paypal-account');
    const { listed, absent } = await intents(partner);
    const file = join(fx.dir, 'STL-20261130.02.009.CSV');
    writeFileSync(
      file,
      readFileSync(PAYPAL, 'utf8').replace(/("SH",[^\r\n]*)"MERCHANT0001"/, '$1"MERCHANT0002"'),
    );
    const env = { PAYPAL_ACCOUNT_ID: 'MERCHANT0001' };
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file, env });
    expect(report.status).to.equal('failed');
    expect(report.error).to.contain(file);
    expect(report.error).to.contain('line 3: SH position 3 is "MERCHANT0002"');
    expect((await intentRow(fx.sql, listed)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, absent)).status).to.equal('unknown');
  });

  it('Adyen: a batch whose Merchant Account is not ADYEN_MERCHANT_ACCOUNT fails the run', async () => {
    const partner = partnerName('adyen-account');
    const reconciler = { ...adyen, partner, source: { ...adyen.source, path: ADYEN } } as typeof adyen;
    const [other] = await reconcile({
      pool: fx.sql,
      reconciler,
      file: ADYEN,
      env: { ADYEN_MERCHANT_ACCOUNT: 'OurShopEU' },
    });
    expect(other.status).to.equal('failed');
    expect(other.error).to.contain('line 2: Merchant Account is "TestMerchantEU"');
    const [ours] = await reconcile({
      pool: fx.sql,
      reconciler,
      file: ADYEN,
      env: { ADYEN_MERCHANT_ACCOUNT: 'TestMerchantEU' },
    });
    expect(ours.status, `error: ${ours.error}`).to.equal('succeeded');
    expect(ours.warnings.join('\n')).not.to.contain('not checked');
  });

  it('a reconciler`s account setting is checked when it is loaded', () => {
    const broken = {
      ...paypal,
      source: {
        ...paypal.source,
        account: { column: 'x', record: 'SH', position: 0, env: 'A-B', valus: [] },
      },
    };
    const problems = (() => {
      try {
        validateReconciler(broken, 'reconcilers/broken.ts');
        return '';
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(problems).to.contain('source.account.valus is not a known setting');
    expect(problems).to.contain('exactly one of column');
    expect(problems).to.contain('account.position must be a field position >= 1');
    expect(problems).to.contain('account.env must name an environment variable');
  });
});
