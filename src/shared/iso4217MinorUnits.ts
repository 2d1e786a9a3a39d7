/**
 * ISO 4217 minor units: how many decimals of a currency its minor unit is (JPY 0, BRL 2, KWD 3), as the
 * standard's List One gives them (published by its maintenance agency, SIX Financial Information: "Current
 * currency & funds code list", the Minor unit column). Every code not named below has 2.
 *
 * A table of our own rather than the runtime's Intl data: `Intl.NumberFormat(...).resolvedOptions()
 * .maximumFractionDigits` gives CLDR's digits for display, which differ from ISO 4217 for IDR, HUF, COP,
 * PKR, IQD and others (0 where ISO 4217 says 2, or 3), and can change with the Node and ICU version. Read as
 * the minor unit of a report in minor units, a 1500000 IDR (15,000.00) would be read 100 times too large
 * (test/reconcile/minorUnits.test.ts). Which codes exist is still the currency data's business
 * (money.ts, assertCurrency).
 */
const EXPONENT_0 = new Set([
  'BIF',
  'CLP',
  'DJF',
  'GNF',
  'ISK',
  'JPY',
  'KMF',
  'KRW',
  'PYG',
  'RWF',
  'UGX',
  'UYI',
  'VND',
  'VUV',
  'XAF',
  'XOF',
  'XPF',
]);
const EXPONENT_3 = new Set(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']);
const EXPONENT_4 = new Set(['CLF', 'UYW']);
/** "N.A." in List One: precious metals, SDR, bond market units, the testing and the no-currency codes. */
const NO_MINOR_UNIT = new Set([
  'XAG',
  'XAU',
  'XBA',
  'XBB',
  'XBC',
  'XBD',
  'XDR',
  'XPD',
  'XPT',
  'XSU',
  'XTS',
  'XUA',
  'XXX',
]);

/**
 * The ISO 4217 minor unit of `currency`, a code in upper case; null for the codes whose minor unit the
 * standard gives as N.A. Whether the code exists is not checked here.
 */
export function iso4217MinorUnits(currency: string): number | null {
  if (NO_MINOR_UNIT.has(currency)) return null;
  if (EXPONENT_0.has(currency)) return 0;
  if (EXPONENT_3.has(currency)) return 3;
  if (EXPONENT_4.has(currency)) return 4;
  return 2;
}
