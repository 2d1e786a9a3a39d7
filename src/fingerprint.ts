import { hash } from 'node:crypto';

/**
 * sha256 of the payload's canonical JSON (object keys sorted, no whitespace). Only this digest is stored:
 * payloads may hold personal data, and the digest is enough to tell "same call redelivered" from
 * "different call under the same key".
 */
export function fingerprint(payload: unknown): string {
  // One-shot hash: half the cost of a Hash object per call, on the path of every ledger.run().
  return hash('sha256', canonicalJson(payload), 'hex');
}

/** JSON with sorted keys, so `{a,b}` and `{b,a}` give the same text. Rejects what JSON cannot carry exactly. */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`payload holds a non-finite number (${value})`);
      return JSON.stringify(value);
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
      if (value instanceof Date) return JSON.stringify(value.toISOString());
      // A Map, Set or class instance would serialise as `{}` and make different payloads look identical,
      // turning a key conflict into a wrong replay: only plain data is accepted.
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) {
        throw new TypeError(
          `payload holds a ${value.constructor?.name ?? 'non-plain object'}; use plain objects and arrays`,
        );
      }
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, item]) => item !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
    }
    case 'undefined':
      return 'null';
    default:
      throw new TypeError(`payload holds a ${typeof value}, which has no JSON form`);
  }
}
