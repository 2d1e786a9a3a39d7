/** Display formatting for the review pages: exact decimals (never through a JS number) and UTC times. */

const ZERO_DECIMAL_CURRENCIES = new Set([
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
  'VND',
  'VUV',
  'XAF',
  'XOF',
  'XPF',
]);

/**
 * `'1234567.5'` -> `'1,234,567.50'`: thousands grouped, padded to the currency's usual decimals, never
 * rounded (an amount with more decimals keeps them all). Anything that is not a plain decimal is returned
 * as it is.
 */
export function formatAmount(amount: string | null, currency: string | null): string {
  if (amount === null || amount === '') return '';
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(amount);
  if (!match) return amount;
  const [, sign, whole, fraction = ''] = match;
  const decimals = currency && ZERO_DECIMAL_CURRENCIES.has(currency) ? 0 : 2;
  const trimmed = fraction.replace(/0+$/, '');
  const shown = trimmed.length >= decimals ? trimmed : trimmed.padEnd(decimals, '0');
  const grouped = whole.replace(/^0+(?=\d)/, '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}${grouped}${shown ? `.${shown}` : ''}`;
}

/** `2025-03-04 13:05 UTC` (without the zone where a column header says UTC). */
export function formatInstant(date: Date | null | undefined, withZone = true): string {
  if (!date) return '';
  const text = date.toISOString().slice(0, 16).replace('T', ' ');
  return withZone ? `${text} UTC` : text;
}

/** How long ago, coarse: `just now`, `5 min`, `3 h`, `4 d`. */
export function formatAge(date: Date, now: Date = new Date()): string {
  const seconds = Math.max(0, Math.floor((now.getTime() - date.getTime()) / 1000));
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

/** `missing_at_partner` -> `Missing at partner` */
export function humanise(code: string): string {
  const words = code.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}
