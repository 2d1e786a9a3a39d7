import { expect } from 'chai';
import { minorUnitDigits } from '../../src/reports/amountConvention.js';
import { formatAmount } from '../../src/shared/formatAmount.js';
import { iso4217MinorUnits } from '../../src/shared/iso4217MinorUnits.js';

/** Minor units as ISO 4217's List One gives them, not as the runtime's display data does. */
describe('ISO 4217 minor units', () => {
  it('gives the standard exponent, including where Intl display digits differ', () => {
    const expected: Record<string, number | null> = {
      BRL: 2,
      USD: 2,
      EUR: 2,
      JPY: 0,
      KRW: 0,
      CLP: 0,
      XOF: 0,
      KWD: 3,
      BHD: 3,
      TND: 3,
      CLF: 4,
      UYW: 4,
      // Intl's display digits on Node 20: 0 for each of these.
      IDR: 2,
      HUF: 2,
      COP: 2,
      PKR: 2,
      IQD: 3,
      XAU: null,
      XDR: null,
    };
    for (const [code, digits] of Object.entries(expected))
      expect(iso4217MinorUnits(code), code).to.equal(digits);
  });

  it('reads a report in minor units by them, and refuses a code without a minor unit', () => {
    expect(minorUnitDigits('IDR')).to.equal(2);
    expect(minorUnitDigits('IQD')).to.equal(3);
    // Codes the ledger accepts for an intent, which Intl.supportedValuesOf('currency') leaves out.
    expect(minorUnitDigits('CLF')).to.equal(4);
    expect(minorUnitDigits('UYW')).to.equal(4);
    expect(minorUnitDigits('XAU')).to.equal(undefined);
    expect(minorUnitDigits('ZZZ')).to.equal(undefined);
  });

  it('formats amounts for people with them', () => {
    expect(formatAmount('15000', 'IDR')).to.equal('15,000.00');
    expect(formatAmount('1.5', 'IQD')).to.equal('1.500');
    expect(formatAmount('1500', 'JPY')).to.equal('1,500');
    expect(formatAmount('1.5', 'XAU')).to.equal('1.5');
  });
});
