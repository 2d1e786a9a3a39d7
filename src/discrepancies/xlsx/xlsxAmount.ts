import { iso4217MinorUnits } from '../../shared/iso4217MinorUnits.js';
import { isKnownCurrency } from '../../shared/money.js';
import { amountStyle, MAX_AMOUNT_DECIMALS, STYLE } from './xlsxStyles.js';

/** An amount as PostgreSQL `numeric` prints it: a plain decimal. */
const PLAIN_DECIMAL = /^-?(\d+)(?:\.(\d+))?$/;

/**
 * Significant digits a double carries exactly through a round trip (DBL_DIG): a decimal of at most 15 is
 * read into the nearest double and shown again, by Excel and LibreOffice alike, as the same decimal.
 */
const DOUBLE_DIGITS = 15;

/** How an amount goes into the sheet: a number cell with its style, or a text cell. */
export type XlsxAmount = { kind: 'number'; value: string; style: number } | { kind: 'text'; value: string };

/**
 * The cell for `amount` (a decimal string from `numeric`) in `currency`. A number cell whenever a
 * spreadsheet's double holds the amount exactly, so SUM works: its value is the stored decimal, shown with
 * the currency's ISO 4217 minor units (JPY `1,234`, BRL `-12.50`, KWD `12.345`, CLF `1.2345`), or more
 * decimals if the amount has more that are not zero (`12.3456` BRL shows all four: a format never hides a
 * digit); General when the currency or its minor unit is not known (none, XAU, a code the currency data
 * does not know). A TEXT cell, holding the exact decimal, when a double cannot: more than 15 significant
 * digits (`12345678901234567.89` would become 12345678901234600), more than 15 decimals to show, or
 * anything that is not a plain decimal. Such a cell is not summed; it is never silently rounded.
 * Null is no cell at all.
 */
export function xlsxAmount(amount: string | null, currency: string | null): XlsxAmount | null {
  if (amount === null || amount === '') return null;
  const match = PLAIN_DECIMAL.exec(amount);
  if (!match) return { kind: 'text', value: amount };
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  const significant = `${match[1]}${fraction}`.replace(/^0+/, '').replace(/0+$/, '');
  if (significant.length > DOUBLE_DIGITS) return { kind: 'text', value: amount };
  const minorUnits = currency !== null && isKnownCurrency(currency) ? iso4217MinorUnits(currency) : null;
  if (minorUnits === null) {
    if (fraction.length > MAX_AMOUNT_DECIMALS) return { kind: 'text', value: amount };
    return { kind: 'number', value: amount, style: STYLE.generalNumber };
  }
  const decimals = Math.max(minorUnits, fraction.length);
  if (decimals > MAX_AMOUNT_DECIMALS) return { kind: 'text', value: amount };
  return { kind: 'number', value: amount, style: amountStyle(decimals) };
}
