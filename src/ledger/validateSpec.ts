import { identifierText } from '../shared/identifierText.js';
import { iso4217MinorUnits } from '../shared/iso4217MinorUnits.js';
import { assertAmount, assertCurrency, writtenDecimals } from '../shared/money.js';
import type { IntentSpec } from '../shared/types.js';

/** An intent spec checked and normalised before anything is written. */
export interface ValidatedSpec {
  partner: string;
  operation: string;
  key: string;
  reference: string | null;
  amount: string | null;
  currency: string | null;
  partnerHonoursKey: boolean;
}

/**
 * Longest partner / key / reference (UTF-8 bytes) the schema can take: (partner, key), (partner, reference)
 * are btree-indexed and a btree entry must fit in about 2.7 kB. Longer values failed inside PostgreSQL as a
 * LedgerUnavailableError ("index row requires N bytes"), which reads as "retry later" though no retry can work.
 */
const MAX_TEXT_BYTES = { partner: 256, key: 2_048, reference: 2_048 } as const;

const REQUIRED_FIELDS = ['partner', 'operation', 'key'] as const;
const TEXT_FIELDS = ['partner', 'operation', 'key', 'reference'] as const;
// Module constants rather than literals in the loop: a literal array or RegExp is a new object each time it is
// evaluated, and this runs on every claim and every replay.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Refuses what the schema could not store faithfully, or what no partner could have been asked to move,
 * with a TypeError naming the field. `subMinorUnitPartners` is `LedgerOptions.subMinorUnitPartners`.
 */
export function validateSpec(spec: IntentSpec, subMinorUnitPartners: ReadonlySet<string>): ValidatedSpec {
  for (const field of REQUIRED_FIELDS) {
    if (typeof spec[field] !== 'string' || spec[field].length === 0) {
      throw new TypeError(`intent ${field} must be a non-empty string`);
    }
  }
  for (const field of TEXT_FIELDS) {
    const value = spec[field];
    if (typeof value !== 'string') continue;
    // PostgreSQL text cannot hold NUL, and the driver would silently turn a lone surrogate into U+FFFD,
    // merging different keys into one intent: refuse both before anything is written.
    if (value.includes('\u0000')) throw new TypeError(`intent ${field} must not contain NUL (\\u0000)`);
    if (LONE_SURROGATE.test(value))
      throw new TypeError(`intent ${field} must be well-formed Unicode (it holds a lone surrogate)`);
    const max = field === 'operation' ? undefined : MAX_TEXT_BYTES[field];
    if (max !== undefined && Buffer.byteLength(value, 'utf8') > max) {
      throw new TypeError(
        `intent ${field} is longer than ${max} bytes (UTF-8), more than the ledger can index`,
      );
    }
  }
  // Reports are read with their identifiers trimmed (a padded `"order-1 "` is order-1: src/shared/
  // identifierText.ts), so an intent whose own reference is padded could never be matched, only end
  // unresolved: refuse it while the caller can still fix it, before anything is written.
  if (typeof spec.reference === 'string' && identifierText(spec.reference) !== spec.reference)
    throw new TypeError(
      'intent reference must not be blank nor begin or end with whitespace: partner reports are read ' +
        'trimmed, so it could never be matched',
    );
  const amount = spec.amount === undefined ? null : assertAmount(spec.amount);
  const currency = spec.currency === undefined ? null : assertCurrency(spec.currency);
  if (amount !== null) assertAmountFitsCurrency(amount, currency, spec.partner, subMinorUnitPartners);
  return {
    partner: spec.partner,
    operation: spec.operation,
    key: spec.key,
    reference: spec.reference ?? null,
    amount,
    currency,
    partnerHonoursKey: spec.partnerHonoursKey ?? false,
  };
}

/**
 * An amount is what the partner is asked to move: never negative (a refund is an operation of its own, with
 * its own positive amount), and by default written with no more decimals than the currency's ISO 4217
 * minor unit (JPY 0, BRL 2, KWD 3), since no acquirer can charge 100.5 JPY and a reconciler would never
 * find it. Decimals are counted as written ("10.000 BRL" is refused too): the ledger stores and replays the
 * string exactly, so it must already be the figure the partner will report. A partner that prices in
 * fractions of the minor unit (0.0079 USD per SMS) is allowed more through `subMinorUnitPartners`. An
 * amount without a currency cannot be checked against a minor unit and is kept as given.
 */
function assertAmountFitsCurrency(
  amount: string,
  currency: string | null,
  partner: string,
  subMinorUnitPartners: ReadonlySet<string>,
): void {
  if (amount.startsWith('-')) {
    throw new TypeError(
      `intent amount must not be negative (got ${JSON.stringify(amount)}): ask the partner for the positive ` +
        'amount it should move, and record a refund as an operation of its own',
    );
  }
  if (currency === null || subMinorUnitPartners.has(partner)) return;
  const allowed = iso4217MinorUnits(currency);
  // A code without a minor unit (XAU, XDR) limits nothing.
  if (allowed === null) return;
  const written = writtenDecimals(amount);
  if (written > allowed) {
    throw new TypeError(
      `intent amount ${JSON.stringify(amount)} has ${written} decimal${written === 1 ? '' : 's'}, more than ` +
        `the ${allowed} of ${currency}'s minor unit (ISO 4217): write it with at most ${allowed} decimal` +
        `${allowed === 1 ? '' : 's'}, or, if partner ${JSON.stringify(partner)} really prices in fractions of ` +
        `the minor unit, list it in createLedger({ subMinorUnitPartners })`,
    );
  }
}
