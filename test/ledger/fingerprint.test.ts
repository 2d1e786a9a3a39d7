import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { canonicalJson, intentFingerprint } from '../../src/ledger/fingerprint.js';

/** The definition intentFingerprint must keep: sha256 of the canonical JSON of the intent's fields. */
const fingerprint = (value: unknown) => createHash('sha256').update(canonicalJson(value)).digest('hex');

/**
 * The fingerprint is stored with every intent and compared on every redelivery: a change in its text would
 * turn each redelivery of an intent claimed before an upgrade into a key conflict. These pin the digest.
 */
describe('fingerprint: the same digest for the same call, whatever the key order, across versions', () => {
  const intent = {
    operation: 'charge',
    payload: { order: 'o-1', amount: '10.00', items: [{ sku: 'b', n: 2 }, null], at: new Date(0) },
    reference: 'r-1',
    amount: '10.00',
    currency: 'BRL',
  };

  it('keeps the digest intents were stored with (canonical JSON: sorted keys, no whitespace)', () => {
    expect(canonicalJson(intent)).to.equal(
      '{"amount":"10.00","currency":"BRL","operation":"charge","payload":{"amount":"10.00",' +
        '"at":"1970-01-01T00:00:00.000Z","items":[{"n":2,"sku":"b"},null],"order":"o-1"},"reference":"r-1"}',
    );
    const { operation, payload, reference, amount, currency } = intent;
    expect(intentFingerprint(operation, payload, reference, amount, currency)).to.equal(
      'f24a7f3c341f116e449c5e8737853d80ac6dcfdf678663fb2469ee5416e20d15',
    );
  });

  it('intentFingerprint is the digest of the intent object, with and without a payload', () => {
    const { operation, payload, reference, amount, currency } = intent;
    expect(intentFingerprint(operation, payload, reference, amount, currency)).to.equal(fingerprint(intent));
    expect(intentFingerprint(operation, undefined, null, null, null)).to.equal(
      fingerprint({ operation, payload: undefined, reference: null, amount: null, currency: null }),
    );
    expect(intentFingerprint(operation, undefined, null, null, null)).to.not.equal(
      intentFingerprint(operation, null, null, null, null),
    );
  });

  it('orders keys by UTF-16 code units, small objects and large alike', () => {
    const keys = ['b', 'a', 'B', '10', '2', 'é', '😀', '_', 'a b', ''];
    const many = Array.from({ length: 40 }, (_, i) => `k${(i * 7) % 40}`);
    for (const list of [keys, many]) {
      const forward = Object.fromEntries(list.map((k, i) => [k, i]));
      const backward = Object.fromEntries([...list].reverse().map((k) => [k, forward[k]]));
      const text = canonicalJson(forward);
      expect(canonicalJson(backward)).to.equal(text);
      const expected = [...list].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      expect(Object.keys(JSON.parse(text))).to.deep.equal(
        // JSON.parse puts integer-like keys first, as every object does: compare the non-integer order.
        [
          ...expected.filter((k) => /^\d+$/.test(k)).sort((x, y) => Number(x) - Number(y)),
          ...expected.filter((k) => !/^\d+$/.test(k)),
        ],
      );
    }
    // By code units, "10" before "2" (not by number, as an object's own key order has it).
    const text = canonicalJson(Object.fromEntries(keys.map((k) => [k, 0])));
    expect(text.indexOf('"10"')).to.be.within(0, text.indexOf('"2"'));
  });
});
