/**
 * A TypeScript consumer of the packed package, as README "Using it from TypeScript" describes: an ES module
 * (top-level await), compiled with `skipLibCheck: false` so every public declaration has to compile.
 * .ci/consumer.sh installs the tarball beside it, type-checks it and runs it against PostgreSQL.
 */
import {
  createLedger,
  DatabaseNotConfiguredError,
  IntentOutcomeUnknownError,
  type Ledger,
  LedgerError,
  type RunResult,
} from 'intent-ledger';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  // Without a database named, the library refuses (it never opens a private one on its own).
  const refused = await createLedger().catch((error: unknown) => error);
  if (!(refused instanceof DatabaseNotConfiguredError)) throw new Error('expected DATABASE_NOT_CONFIGURED');
}
const ledger: Ledger = await createLedger(
  databaseUrl
    ? { databaseUrl }
    : { embedded: { dataDir: process.env.CONSUMER_DATA_DIR ?? '.data/postgres' } },
);
try {
  const key = `consumer-${process.pid}:charge`;
  const spec = {
    partner: 'acme-pay',
    operation: 'charge',
    key,
    payload: { amount: '12.34' },
    amount: '12.34',
    currency: 'BRL',
  };
  let calls = 0;
  const first: RunResult = await ledger.run(spec, async () => {
    calls++;
    return { partnerReference: 'NSU-1', response: { ok: true } };
  });
  const again = await ledger.run(spec, async () => {
    calls++;
    return { partnerReference: 'NSU-2' };
  });
  if (first.replayed || !again.replayed || calls !== 1 || again.partnerReference !== 'NSU-1')
    throw new Error(`not exactly once: ${JSON.stringify({ first, again, calls })}`);
  const unknown = new IntentOutcomeUnknownError({ partner: 'acme-pay', key, attempt: 1 });
  if (!(unknown instanceof LedgerError) || unknown.code !== 'INTENT_OUTCOME_UNKNOWN')
    throw new Error('error types');
  console.log(`consumer: charged once, replayed once (intent ${first.intentId})`);
} finally {
  await ledger.close();
}
