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

/** Checks an ISO 4217 currency code given by a caller. */
export function assertCurrency(currency: string, field = 'currency'): string {
  if (typeof currency !== 'string' || !CURRENCY.test(currency)) {
    throw new TypeError(
      `${field} must be an ISO 4217 code in upper case such as "BRL" (got ${JSON.stringify(currency)})`,
    );
  }
  return currency;
}
