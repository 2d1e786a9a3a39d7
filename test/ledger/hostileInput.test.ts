import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import { IdempotencyKeyConflictError, IntentOutcomeUnknownError } from '../../src/shared/errors/index.js';
import type { CallResult, IntentSpec } from '../../src/shared/types.js';
import { rejectionOf, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

/** Printable ASCII drawn at random: incompressible, so PostgreSQL cannot squeeze it under an index limit. */
function randomText(length: number): string {
  const bytes = randomBytes(length);
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(32 + (byte % 95));
  return text;
}

const HOSTILE: [string, string][] = [
  ['sql injection', "'; DROP TABLE intents; --"],
  ['quotes of every kind', `"double" 'single' \`back\` ''escaped'' ""x""`],
  ['backslashes and escapes', String.raw`C:\new\table \\ \x00 \u0000 \' \" E'\n'`],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${x} is the point: it must not be interpolated anywhere
  ['placeholders', '$1 $2::text $$ $tag$ ? :name %s %d {0} ${x} #{y}'],
  ['LIKE and regex metacharacters', '%_[]^$.*+?(){}|\\'],
  ['unicode scripts', 'ação ñ 日本語 עברית العربية ελληνικά Ωmega'],
  ['emoji with joiners and flags', '💸🏦👨‍👩‍👧‍👦 🇧🇷 🏳️‍🌈 1️⃣'],
  ['control characters (no NUL)', '\u0001\u0007\b\t\n\r\u000b\f\u001b[31mred\u001b[0m\u007f\u0085'],
  ['line and paragraph separators, BOM, zero width', '\u2028\u2029\ufeff\u200b\u200d\u202e'],
  ['JSON-looking text', '{"status":"completed","attempt":99}'],
  ['only spaces', '   '],
];

describe('hostile input: keys, references, partner names and payloads round-trip unchanged', () => {
  const db = useFreshDatabase('hostile');
  let ledger: Ledger;
  let sql: Pool;
  before(async () => {
    ledger = await testLedger(db.url);
    sql = sqlPool(db.url);
  });
  after(async () => {
    await ledger?.close();
    await sql?.end();
  });

  async function intentCount(): Promise<number> {
    return Number((await sql.query('SELECT count(*) FROM intents')).rows[0].count);
  }

  /** Runs `s` with a partner that echoes `text` back, then checks run, get and replay return it byte for byte. */
  async function roundTrip(s: IntentSpec, text: string): Promise<void> {
    let calls = 0;
    const result = await ledger.run(s, async (context) => {
      calls++;
      expect(context.key).to.equal(s.key);
      return { partnerReference: text, response: { text, [text]: [text, 1], nested: { text } } };
    });
    expect(calls).to.equal(1);
    const response = { text, [text]: [text, 1], nested: { text } };
    expect(result).to.deep.include({ replayed: false, partnerReference: text, response });
    const intent = await ledger.get(s.partner, s.key);
    expect(intent).to.deep.include({
      partner: s.partner,
      operation: s.operation,
      key: s.key,
      reference: s.reference,
      status: 'completed',
      partnerReference: text,
      response,
    });
    const replay = await ledger.run(s, async () => {
      calls++;
      return {};
    });
    expect(calls).to.equal(1);
    expect(replay).to.deep.equal({ ...result, replayed: true });
    // Compared by PostgreSQL too, so a driver that changed the text both ways could not hide it.
    const stored = await sql.query(
      'SELECT key = $1 AND partner = $2 AND reference = $3 AND partner_reference = $4 AS same FROM intents WHERE id = $5',
      [s.key, s.partner, s.reference, text, intent?.id],
    );
    expect(stored.rows).to.deep.equal([{ same: true }]);
  }

  HOSTILE.forEach(([label, text], index) => {
    it(`${label}: as key, partner, operation, reference, payload, partner reference and response`, async () => {
      const s: IntentSpec = {
        partner: `partner ${index} ${text}`,
        operation: `op ${text}`,
        key: text,
        payload: { text, [text]: text },
        // Bracketed: a reference is read trimmed from reports, so one with edge whitespace is refused
        // (test/faults/security.test.ts); inside, the hostile text is kept byte for byte.
        reference: `ref [${text}]`,
        amount: '1.00',
        currency: 'USD',
      };
      await roundTrip(s, text);
      // Same key and partner with a payload differing only in the hostile text is a conflict, not a replay.
      const conflict = await rejectionOf(
        ledger.run({ ...s, payload: { text: `${text}x`, [text]: text } }, async () => ({})),
      );
      expect(conflict).to.be.instanceOf(IdempotencyKeyConflictError);
    });
  });

  it('the tables survived the injection attempts', async () => {
    const tables = await sql.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
    );
    expect(tables.rows.map((r) => r.table_name)).to.include.members([
      'discrepancies',
      'discrepancy_history',
      'inbox',
      'intent_attempts',
      'intents',
    ]);
    expect(await intentCount()).to.equal(HOSTILE.length);
  });

  it('keys that only look alike are different intents (no normalisation, trimming or case folding)', async () => {
    const lookalikes = ['caf\u00e9', 'cafe\u0301', 'cafe', 'Cafe', 'cafe ', ' cafe', 'cafe\u200b', 'cafe\n'];
    const refs: string[] = [];
    for (const key of lookalikes) {
      const result = await ledger.run(
        { partner: 'lookalike', operation: 'op', key, payload: {} },
        async () => ({ partnerReference: `R${refs.length}` }),
      );
      refs.push(result.partnerReference as string);
      expect(result.replayed).to.equal(false);
    }
    expect(refs).to.deep.equal(lookalikes.map((_, i) => `R${i}`));
    const stored = await sql.query(`SELECT key FROM intents WHERE partner = 'lookalike' ORDER BY id`);
    expect(stored.rows.map((r) => r.key)).to.deep.equal(lookalikes);
  });

  it('the longest indexable key and reference (2048 bytes of random text) round-trip unchanged', async () => {
    const key = randomText(2_048);
    const s: IntentSpec = {
      partner: 'long',
      operation: 'op',
      key,
      payload: { key },
      // A reference may not begin or end with whitespace (validateSpec.ts), and random printable text does
      // about one time in fifty: its ends are pinned, the 2,046 characters between stay random.
      reference: `R${randomText(2_046)}R`,
    };
    await roundTrip(s, randomText(2_048));
  });

  it('two 2048-byte keys that differ only in their last character are two intents', async () => {
    const base = randomText(2_047);
    const a = await ledger.run(
      { partner: 'long', operation: 'op', key: `${base}a`, payload: {} },
      async () => ({ partnerReference: 'A' }),
    );
    const b = await ledger.run(
      { partner: 'long', operation: 'op', key: `${base}b`, payload: {} },
      async () => ({ partnerReference: 'B' }),
    );
    expect([a.replayed, b.replayed, a.intentId === b.intentId]).to.deep.equal([false, false, false]);
  });

  it('the limit counts UTF-8 bytes: 512 four-byte emoji are accepted, 513 are refused', async () => {
    const ok = await ledger.run(
      { partner: 'long', operation: 'op', key: '💸'.repeat(512), payload: {} },
      async () => ({}),
    );
    expect((await ledger.get('long', '💸'.repeat(512)))?.id).to.equal(ok.intentId);
    const error = await rejectionOf(
      ledger.run({ partner: 'long', operation: 'op', key: '💸'.repeat(513), payload: {} }, async () => ({})),
    );
    expect(error).to.be.instanceOf(TypeError);
  });

  for (const field of ['key', 'reference', 'partner'] as const) {
    it(`a 10 kB ${field} is refused with a clear TypeError (PostgreSQL cannot index it), nothing written or called`, async () => {
      const before = await intentCount();
      let calls = 0;
      const s: IntentSpec = {
        partner: 'long',
        operation: 'op',
        key: `too-long-${field}`,
        payload: {},
        reference: 'r',
      };
      s[field] = randomText(10_240);
      const error = await rejectionOf(ledger.run(s, async () => ({ partnerReference: String(++calls) })));
      expect(error).to.be.instanceOf(TypeError);
      expect((error as Error).message).to.match(new RegExp(`${field} is longer than \\d+ bytes`));
      expect(calls).to.equal(0);
      expect(await intentCount()).to.equal(before);
    });
  }

  for (const field of ['key', 'partner', 'operation', 'reference'] as const) {
    it(`NUL in the ${field}: a clear TypeError before anything is written or called`, async () => {
      const before = await intentCount();
      let calls = 0;
      const s: IntentSpec = {
        partner: 'nul',
        operation: 'op',
        key: `nul-${field}`,
        payload: {},
        reference: 'r',
      };
      s[field] = `${s[field]}\u0000tail`;
      const error = await rejectionOf(ledger.run(s, async () => ({ partnerReference: String(++calls) })));
      expect(error).to.be.instanceOf(TypeError);
      expect((error as Error).message).to.match(new RegExp(`${field}.*NUL`));
      expect(calls).to.equal(0);
      expect(await intentCount()).to.equal(before);
    });
  }

  it('lone UTF-16 surrogates are refused, since PostgreSQL would store U+FFFD and merge different keys', async () => {
    const before = await intentCount();
    for (const key of ['half \ud800', 'half \udc00']) {
      const error = await rejectionOf(
        ledger.run({ partner: 'surrogate', operation: 'op', key, payload: {} }, async () => ({})),
      );
      expect(error).to.be.instanceOf(TypeError);
      expect((error as Error).message).to.match(/key.*well-formed/);
    }
    expect(await intentCount()).to.equal(before);
  });

  it('NUL in the payload is fine: only its fingerprint is stored', async () => {
    const s: IntentSpec = {
      partner: 'nul',
      operation: 'op',
      key: 'nul-payload',
      payload: { note: 'a\u0000b' },
    };
    expect(await ledger.run(s, async () => ({ partnerReference: 'P' }))).to.include({ replayed: false });
    expect(await ledger.run(s, async () => ({ partnerReference: 'Q' }))).to.include({
      replayed: true,
      partnerReference: 'P',
    });
    const other = await rejectionOf(ledger.run({ ...s, payload: { note: 'a\u0000c' } }, async () => ({})));
    expect(other).to.be.instanceOf(IdempotencyKeyConflictError);
  });

  for (const [label, answer, cause] of [
    ['NUL in the partner reference', { partnerReference: 'NSU\u00001' }, /0x00/],
    ['NUL in the response', { response: { text: 'a\u0000b' } }, /unsupported Unicode escape sequence/],
    ['a 10 kB partner reference', { partnerReference: randomText(10_240) }, /index row/],
  ] as const) {
    it(`a partner answer PostgreSQL cannot store (${label}) is never stored altered: outcome unknown, with the cause`, async () => {
      const s: IntentSpec = { partner: 'unstorable', operation: 'op', key: label, payload: {} };
      const error = await rejectionOf(ledger.run(s, async () => answer));
      expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
      expect(String((error as Error & { cause?: Error }).cause?.message)).to.match(cause);
      const intent = await ledger.get(s.partner, s.key);
      expect(intent).to.deep.include({ status: 'in_progress', partnerReference: null, response: null });
      expect(intent?.attempts.map((a) => a.outcome)).to.deep.equal([null]);
    });
  }

  it('a callback resolving null or undefined (a JavaScript caller) still has its success recorded', async () => {
    for (const [key, value] of [
      ['resolves-null', null],
      ['resolves-undefined', undefined],
    ] as const) {
      const s: IntentSpec = { partner: 'loose', operation: 'op', key, payload: {} };
      const result = await ledger.run(s, async () => value as unknown as CallResult);
      expect(result).to.include({ replayed: false, attempt: 1, partnerReference: null, response: null });
      expect(await ledger.get(s.partner, s.key)).to.deep.include({
        status: 'completed',
        partnerReference: null,
        response: null,
      });
    }
  });

  it('money and currency smuggling is refused before the database', async () => {
    for (const [amount, currency] of [
      ['10.00; DROP TABLE intents', 'BRL'],
      ['1e5', 'BRL'],
      [' 10.00', 'BRL'],
      ['10.00', 'BRL\n'],
      ['10.00', "BR'"],
    ]) {
      const error = await rejectionOf(
        ledger.run(
          { partner: 'money', operation: 'op', key: `${amount}|${currency}`, payload: {}, amount, currency },
          async () => ({}),
        ),
      );
      expect(error).to.be.instanceOf(TypeError);
    }
    expect(
      Number((await sql.query(`SELECT count(*) FROM intents WHERE partner = 'money'`)).rows[0].count),
    ).to.equal(0);
  });
});
