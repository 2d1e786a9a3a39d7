/**
 * Money travels as decimal strings and is stored as PostgreSQL `numeric`: never a JS number, which
 * cannot hold 0.1 exactly. Arithmetic goes through decimal.js.
 */
const AMOUNT = /^-?\d{1,20}(\.\d{1,10})?$/;
const CURRENCY = /^[A-Z]{3}$/;

/** Checks an amount given by a caller; returns it unchanged, or throws naming the field. */
export function assertAmount(amount: string, field = 'amount'): string {
  if (typeof amount !== 'string' || !AMOUNT.test(amount)) {
    throw new TypeError(
      `${field} must be a decimal string such as "1234.50" (got ${JSON.stringify(amount)})`,
    );
  }
  return amount;
}

/**
 * Currency names from the ICU data Node ships with; `fallback: 'none'` answers `undefined` for a code ICU
 * does not know (Intl.NumberFormat would silently format "XYZ" with 2 decimals). Not
 * `Intl.supportedValuesOf('currency')`: it leaves out real ISO 4217 codes such as CLF.
 */
const currencyNames = new Intl.DisplayNames(['en'], { type: 'currency', fallback: 'none' });
/**
 * Codes the currency data knew, remembered: asking `Intl.DisplayNames` was the largest single cost of
 * validating a spec, on every claim and every replay (docs/PERFORMANCE.md, "The ledger's hot path"). Holds
 * only codes ICU knows, so at most a few hundred.
 */
const knownCurrencies = new Set<string>();

/** Checks an ISO 4217 currency code given by a caller: upper case, and one the currency data knows. */
export function assertCurrency(currency: string, field = 'currency'): string {
  if (typeof currency !== 'string' || !CURRENCY.test(currency)) {
    throw new TypeError(
      `${field} must be an ISO 4217 code in upper case such as "BRL" (got ${JSON.stringify(currency)})`,
    );
  }
  if (!isKnownCurrency(currency)) {
    throw new TypeError(
      `${field} ${JSON.stringify(currency)} is not an ISO 4217 currency code known to this Node's currency data`,
    );
  }
  return currency;
}

/** Whether `code` is three upper-case letters the currency data knows, as assertCurrency requires. */
export function isKnownCurrency(code: string): boolean {
  if (knownCurrencies.has(code)) return true;
  if (!CURRENCY.test(code)) return false;
  if (currencyNames.of(code) === undefined) return false;
  knownCurrencies.add(code);
  return true;
}

/** How many decimals an amount that passed `assertAmount` is written with ("10" 0, "10.50" 2). */
export function writtenDecimals(amount: string): number {
  const point = amount.indexOf('.');
  return point === -1 ? 0 : amount.length - point - 1;
}
