/**
 * The worker of the crash-point suite (test/faults/crashPoints.test.ts), run in its own process: it opens its
 * own ledger (pool of ONE connection, so the parent can watch that backend in pg_stat_activity), then calls
 * the loopback partner through `ledger.run()` and prints a JSON line on stdout at each step of the flow:
 *
 *   ready {pid} -> claimed {intentId, attempt} -> calling -> answered {partnerReference} -> completed
 *
 * At each step named in `stops` it waits for the line `go <step>` on stdin, so the parent decides exactly
 * where the SIGKILL lands. Input: one JSON argument ({@link CrashPointInput}).
 */
import { createInterface } from 'node:readline';
import { createLedger } from '../../src/ledger/createLedger.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { capturingLogger } from '../support/testLedger.js';
import { CRASH_KEY_HEADER } from './crashPointProcess.js';

export type CrashStep = 'claimed' | 'answered';

export interface CrashPointInput {
  databaseUrl: string;
  partnerUrl: string;
  leaseMs: number;
  owner: string;
  spec: IntentSpec;
  /** Steps at which to wait for `go <step>` on stdin. */
  stops: CrashStep[];
  /**
   * Set `client_connection_check_interval` on the worker's connection: PostgreSQL then notices the dead
   * client while a statement waits (on a lock) and aborts that statement. Off (PostgreSQL's default), the
   * statement runs to the end, commit included, after the worker is gone.
   */
  serverChecksClient: boolean;
}

/** One line the worker prints. */
export type CrashPointEvent =
  | { event: 'ready'; pid: number; checkInterval: string }
  | { event: 'claimed'; intentId: string; attempt: number }
  | { event: 'calling' }
  | { event: 'answered'; partnerReference: string }
  | { event: 'completed'; replayed: boolean }
  | { event: 'error'; name: string; message: string };

function emit(event: CrashPointEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '') as CrashPointInput;
  const released = new Set<string>();
  const waiting = new Map<string, () => void>();
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, step] = line.trim().split(' ');
    if (command !== 'go' || !step) return;
    released.add(step);
    waiting.get(step)?.();
  });
  const gate = (step: CrashStep): Promise<void> => {
    if (!input.stops.includes(step) || released.has(step)) return Promise.resolve();
    return new Promise((resolve) => waiting.set(step, resolve));
  };

  const ledger = await createLedger({
    databaseUrl: input.databaseUrl,
    migrate: false,
    leaseMs: input.leaseMs,
    owner: input.owner,
    poolSize: 1,
    logger: capturingLogger(),
  });
  // poolSize 1: this is the one connection every statement of this worker goes through.
  if (input.serverChecksClient) await ledger.dataSource.query(`SET client_connection_check_interval = 20`);
  const [{ pid, interval }] = (await ledger.dataSource.query(
    `SELECT pg_backend_pid() AS pid, current_setting('client_connection_check_interval') AS interval`,
  )) as { pid: number; interval: string }[];
  // The ledger's abort timer is unref'd: keep the process alive so only the parent's SIGKILL ends it.
  setInterval(() => undefined, 60_000);
  emit({ event: 'ready', pid, checkInterval: interval });

  const { spec } = input;
  const result = await ledger.run(spec, async ({ intentId, attempt, signal }) => {
    emit({ event: 'claimed', intentId, attempt });
    await gate('claimed');
    emit({ event: 'calling' });
    const response = await fetch(`${input.partnerUrl}/v1/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [CRASH_KEY_HEADER]: spec.key },
      body: JSON.stringify({ reference: spec.reference, amount: spec.amount, currency: spec.currency }),
      signal,
    });
    if (!response.ok) throw Object.assign(new Error(`HTTP ${response.status}`), { response });
    const body = (await response.json()) as { id: string };
    emit({ event: 'answered', partnerReference: body.id });
    await gate('answered');
    return { partnerReference: body.id, response: { id: body.id } };
  });
  emit({ event: 'completed', replayed: result.replayed });
}

main().catch((error: unknown) => {
  emit({
    event: 'error',
    name: error instanceof Error ? error.name : 'unknown',
    message: error instanceof Error ? error.message : String(error),
  });
  process.exit(1);
});
