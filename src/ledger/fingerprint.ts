import { hash } from 'node:crypto';

/**
 * The fingerprint of an intent: sha256 of the canonical JSON (object keys sorted, no whitespace) of
 * `{ operation, payload, reference, amount, currency }`. Only this digest is stored: payloads may hold
 * personal data, and the digest is enough to tell "same call redelivered" from "different call under the
 * same key". The outer object is written directly in its sorted key order instead of built, listed and
 * sorted on every ledger.run(); `payload` undefined is left out, as canonicalJson leaves out undefined
 * members. One-shot `hash()`: cheaper per call than a Hash object (docs/PERFORMANCE.md, "The ledger's hot
 * path").
 */
export function intentFingerprint(
  operation: string,
  payload: unknown,
  reference: string | null,
  amount: string | null,
  currency: string | null,
): string {
  const payloadMember = payload === undefined ? '' : `,"payload":${canonicalJson(payload)}`;
  const text =
    `{"amount":${canonicalJson(amount)},"currency":${canonicalJson(currency)},` +
    `"operation":${canonicalJson(operation)}${payloadMember},"reference":${canonicalJson(reference)}}`;
  return hash('sha256', text, 'hex');
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
      if (Array.isArray(value)) {
        let text = '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) text += ',';
          // A hole stays empty, as map() and join() wrote it: the digest of every stored payload is kept.
          if (i in value) text += canonicalJson(value[i] ?? null);
        }
        return `${text}]`;
      }
      if (value instanceof Date) return JSON.stringify(value.toISOString());
      // A Map, Set or class instance would serialise as `{}` and make different payloads look identical,
      // turning a key conflict into a wrong replay: only plain data is accepted.
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) {
        throw new TypeError(
          `payload holds a ${value.constructor?.name ?? 'non-plain object'}; use plain objects and arrays`,
        );
      }
      // A loop over sorted keys rather than entries/filter/sort/map/join, and an insertion sort for the
      // usual handful of keys: Array.prototype.sort allocates even for three keys, and this runs on every
      // ledger.run() (docs/PERFORMANCE.md, "The ledger's hot path"). Both orders compare UTF-16 code units,
      // as `<` does, so the text (and the digest) is unchanged.
      const record = value as Record<string, unknown>;
      const keys = sortedKeys(record);
      let text = '{';
      for (let i = 0; i < keys.length; i++) {
        const item = record[keys[i]];
        if (item === undefined) continue;
        text += `${text.length === 1 ? '' : ','}${JSON.stringify(keys[i])}:${canonicalJson(item)}`;
      }
      return `${text}}`;
    }
    case 'undefined':
      return 'null';
    default:
      throw new TypeError(`payload holds a ${typeof value}, which has no JSON form`);
  }
}

/** Keys an insertion sort handles faster, and with less garbage, than Array.prototype.sort. */
const SMALL_OBJECT_KEYS = 16;

function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  if (keys.length > SMALL_OBJECT_KEYS) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}
