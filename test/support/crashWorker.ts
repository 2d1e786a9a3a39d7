/**
 * A worker process for the crash tests: opens its own ledger, claims `spec` through `run()`, prints
 * `{"event":"calling",...}` on stdout once the partner callback runs, and then hangs inside the call (the
 * partner never answers) until the parent kills it. Input: one JSON argument ({@link CrashWorkerInput}).
 */
import { createLedger } from '../../src/ledger/createLedger.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { capturingLogger } from './testLedger.js';

export interface CrashWorkerInput {
  databaseUrl: string;
  leaseMs: number;
  owner: string;
  spec: IntentSpec;
}

/** One line the worker prints. */
export type CrashWorkerEvent =
  | { event: 'calling'; intentId: string; attempt: number; key: string }
  | { event: 'aborted' }
  | { event: 'error'; message: string };

function emit(event: CrashWorkerEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '') as CrashWorkerInput;
  const ledger = await createLedger({
    databaseUrl: input.databaseUrl,
    migrate: false,
    leaseMs: input.leaseMs,
    owner: input.owner,
    poolSize: 1,
    logger: capturingLogger(),
  });
  // The ledger's abort timer is unref'd: keep the process alive so only the parent's SIGKILL ends it.
  setInterval(() => undefined, 60_000);
  await ledger.run(input.spec, ({ intentId, attempt, key, signal }) => {
    signal.addEventListener('abort', () => emit({ event: 'aborted' }), { once: true });
    emit({ event: 'calling', intentId, attempt, key });
    return new Promise(() => undefined);
  });
}

main().catch((error: unknown) => {
  emit({
    event: 'error',
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  process.exit(1);
});
