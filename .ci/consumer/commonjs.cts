/**
 * The same consumer as CommonJS (what `npm init -y` makes): no top-level await, the ledger opened inside an
 * async function. Compiled with the same tsconfig (`module: nodenext` makes a `.cts` file CommonJS).
 */
import { createLedger, type RunResult } from 'intent-ledger';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  const ledger = await createLedger(
    databaseUrl
      ? { databaseUrl }
      : { embedded: { dataDir: process.env.CONSUMER_DATA_DIR ?? '.data/postgres' } },
  );
  try {
    const spec = {
      partner: 'globex-sms',
      operation: 'send',
      key: `cjs-${process.pid}:send`,
      payload: { to: 'x' },
    };
    const result: RunResult = await ledger.run(spec, async () => ({ partnerReference: 'SMS-1' }));
    if (result.replayed || result.partnerReference !== 'SMS-1') throw new Error(JSON.stringify(result));
    console.log(`commonjs consumer: sent once (intent ${result.intentId})`);
  } finally {
    await ledger.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
