import { assertAmount, assertCurrency } from '../shared/money.js';
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

/** Refuses what the schema could not store faithfully, with a TypeError naming the field. */
export function validateSpec(spec: IntentSpec): ValidatedSpec {
  for (const field of ['partner', 'operation', 'key'] as const) {
    if (typeof spec[field] !== 'string' || spec[field].length === 0) {
      throw new TypeError(`intent ${field} must be a non-empty string`);
    }
  }
  for (const field of ['partner', 'operation', 'key', 'reference'] as const) {
    const value = spec[field];
    if (typeof value !== 'string') continue;
    // PostgreSQL text cannot hold NUL, and the driver would silently turn a lone surrogate into U+FFFD,
    // merging different keys into one intent: refuse both before anything is written.
    if (value.includes('\u0000')) throw new TypeError(`intent ${field} must not contain NUL (\\u0000)`);
    if (/\p{Cs}/u.test(value))
      throw new TypeError(`intent ${field} must be well-formed Unicode (it holds a lone surrogate)`);
    const max = field === 'operation' ? undefined : MAX_TEXT_BYTES[field];
    if (max !== undefined && Buffer.byteLength(value, 'utf8') > max) {
      throw new TypeError(
        `intent ${field} is longer than ${max} bytes (UTF-8), more than the ledger can index`,
      );
    }
  }
  return {
    partner: spec.partner,
    operation: spec.operation,
    key: spec.key,
    reference: spec.reference ?? null,
    amount: spec.amount === undefined ? null : assertAmount(spec.amount),
    currency: spec.currency === undefined ? null : assertCurrency(spec.currency),
    partnerHonoursKey: spec.partnerHonoursKey ?? false,
  };
}
