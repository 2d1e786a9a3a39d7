import { iso4217MinorUnits } from './iso4217MinorUnits.js';

const PLAIN_DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;
const CURRENCY_CODE = /^[A-Z]{3}$/;

/**
 * An exact decimal for people: `'1234567.5'` in BRL -> `'1,234,567.50'`. Thousands grouped, padded to the
 * currency's ISO 4217 minor unit (JPY 0, KWD 3: see iso4217MinorUnits), never rounded (an
 * amount with more decimals keeps them all) and never through a JS number. Without a currency, or with one
 * that is not a code, only the grouping changes. Anything that is not a plain decimal is returned as it is.
 * The review pages and the HTML summary both format through here.
 */
export function formatAmount(amount: string | null, currency?: string | null): string {
  if (amount === null || amount === '') return '';
  const match = PLAIN_DECIMAL.exec(amount);
  if (!match) return amount;
  const [, sign, whole, fraction = ''] = match;
  const decimals = currency && CURRENCY_CODE.test(currency) ? iso4217MinorUnits(currency) : null;
  let shown = fraction;
  if (decimals !== null) {
    const trimmed = fraction.replace(/0+$/, '');
    shown = trimmed.length >= decimals ? trimmed : trimmed.padEnd(decimals, '0');
  }
  const grouped = whole.replace(/^0+(?=\d)/, '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}${grouped}${shown ? `.${shown}` : ''}`;
}
