import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { rejectionOf, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

/**
 * Issue 16, case 8: amounts the ledger accepted before this change (-5.00 BRL, 100.5 JPY, 1.2345 KWD,
 * 10.001 BRL, any amount in an unknown currency such as XYZ) are refused before anything is written; the
 * "refused" cases below fail on the code before it, the "accepted" ones pass on both.
 */
describe('ledger amounts: never negative, no finer than the currency minor unit unless the partner prices so', () => {
  const db = useFreshDatabase('amounts');
  let ledger: Ledger;
  let sql: Pool;
  let counter = 0;
  const spec = (amount: string, currency: string, partner = 'acme-pay'): IntentSpec => ({
    partner,
    operation: 'charge',
    key: `amount-${++counter}`,
    payload: { amount, currency },
    amount,
    currency,
  });
  const stored = async (partner: string): Promise<number> =>
    Number((await sql.query('SELECT count(*) FROM intents WHERE partner = $1', [partner])).rows[0].count);

  before(async () => {
    ledger = await testLedger(db.url, { subMinorUnitPartners: ['globex-sms'] });
    sql = sqlPool(db.url);
  });
  after(async () => {
    await ledger.close();
    await sql.end();
  });

  it('refuses a negative amount with a TypeError naming the field, and writes nothing', async () => {
    for (const partner of ['acme-pay', 'globex-sms']) {
      const error = await rejectionOf(ledger.run(spec('-5.00', 'BRL', partner), async () => ({})));
      expect(error).to.be.instanceOf(TypeError);
      expect((error as Error).message).to.match(/^intent amount must not be negative \(got "-5\.00"\)/);
      expect(await stored(partner)).to.equal(0);
    }
  });

  it('refuses more decimals than the ISO 4217 minor unit, naming amount, currency and the way out', async () => {
    const cases: [string, string, number, number][] = [
      ['100.5', 'JPY', 1, 0],
      ['1.2345', 'KWD', 4, 3],
      ['10.001', 'BRL', 3, 2],
      ['10.000', 'BRL', 3, 2],
      ['0.0079', 'USD', 4, 2],
      ['1.0001', 'IQD', 4, 3],
    ];
    for (const [amount, currency, written, allowed] of cases) {
      const error = await rejectionOf(ledger.run(spec(amount, currency), async () => ({})));
      expect(error, `${amount} ${currency}`).to.be.instanceOf(TypeError);
      const message = (error as Error).message;
      expect(message).to.contain(`intent amount "${amount}" has ${written} decimal`);
      expect(message).to.contain(`the ${allowed} of ${currency}'s minor unit (ISO 4217)`);
      expect(message).to.contain(`write it with at most ${allowed} decimal`);
      expect(message).to.contain('createLedger({ subMinorUnitPartners })');
    }
    // The two-phase form goes through the same check.
    expect(await rejectionOf(ledger.begin(spec('100.5', 'JPY')))).to.be.instanceOf(TypeError);
    expect(await stored('acme-pay')).to.equal(0);
  });

  it('refuses a well-formed but unknown currency code, naming it', async () => {
    const error = await rejectionOf(ledger.run(spec('10.00', 'XYZ'), async () => ({})));
    expect(error).to.be.instanceOf(TypeError);
    expect((error as Error).message).to.equal(
      'currency "XYZ" is not an ISO 4217 currency code known to this Node\'s currency data',
    );
    expect(await stored('acme-pay')).to.equal(0);
  });

  it('accepts amounts within the minor unit, and zero', async () => {
    const accepted: [string, string][] = [
      ['100', 'JPY'],
      ['1.234', 'KWD'],
      ['1.2', 'KWD'],
      ['10.00', 'BRL'],
      ['10', 'BRL'],
      ['0.00', 'BRL'],
      ['0', 'JPY'],
      ['99.99', 'USD'],
      // ISO 4217 gives these 2 and 3 decimals where the runtime's display data gives 0.
      ['15000.00', 'IDR'],
      ['1.5', 'HUF'],
      ['1.250', 'IQD'],
    ];
    for (const [amount, currency] of accepted) {
      const s = spec(amount, currency);
      const result = await ledger.run(s, async () => ({}));
      expect(result.status, `${amount} ${currency}`).to.equal('completed');
      expect((await ledger.get(s.partner, s.key))?.amount).to.equal(amount);
    }
  });

  it('a partner listed in subMinorUnitPartners may price in fractions of the minor unit', async () => {
    const s = spec('0.0079', 'USD', 'globex-sms');
    await ledger.run(s, async () => ({}));
    expect((await ledger.get(s.partner, s.key))?.amount).to.equal('0.0079');
    const yen = spec('0.5', 'JPY', 'globex-sms');
    await ledger.run(yen, async () => ({}));
    expect((await ledger.get(yen.partner, yen.key))?.amount).to.equal('0.5');
  });

  it('refuses a malformed subMinorUnitPartners option when the ledger is created', async () => {
    const error = await rejectionOf(testLedger(db.url, { subMinorUnitPartners: [''] }));
    expect(error).to.be.instanceOf(TypeError);
    expect((error as Error).message).to.match(/subMinorUnitPartners must be an array of partner names/);
  });
});
