/**
 * The worker of the run-heartbeat suite (test/faults/runKill.test.ts), run in its own process: it reconciles
 * one CSV file through the real `reconcile()` and prints a JSON line on stdout for every progress event,
 * numbered (`reading#1` when the run row is written, `reading#2`, `reading#3` after each staged batch,
 * `deciding`, then `done` with the status). At each event named in `pauseAt` it blocks its whole process
 * (Atomics.wait: no timer, no heartbeat, no I/O) so that the parent's SIGKILL lands exactly there.
 * Input: one JSON argument ({@link RunKillInput}).
 */
import { Pool } from 'pg';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { capturingLogger } from '../support/testLedger.js';

export interface RunKillInput {
  databaseUrl: string;
  reconciler: ReconcilerConfig;
  heartbeatMs: number;
  abandonAfterMs: number;
  /** Events after which the process freezes (for up to a minute) until it is killed. */
  pauseAt: string[];
}

/** One line the worker prints: a progress event (`runId`, `rowsRead`), `done` or `error`. */
export interface RunKillEvent {
  event: string;
  runId?: string;
  rowsRead?: number;
  status?: string;
  error?: string | null;
  message?: string;
}

function emit(event: RunKillEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '') as RunKillInput;
  const pool = new Pool({ connectionString: input.databaseUrl, max: 3 });
  const seen = new Map<string, number>();
  const [report] = await reconcile({
    pool,
    reconciler: input.reconciler,
    heartbeatMs: input.heartbeatMs,
    abandonAfterMs: input.abandonAfterMs,
    owner: `kill-worker:${process.pid}`,
    logger: capturingLogger(),
    onProgress: (progress) => {
      if (progress.phase === 'done') return;
      const count = (seen.get(progress.phase) ?? 0) + 1;
      seen.set(progress.phase, count);
      const event = progress.phase === 'reading' ? `reading#${count}` : progress.phase;
      emit({ event, runId: progress.runId, rowsRead: progress.rowsRead });
      if (input.pauseAt.includes(event)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
    },
  });
  emit({
    event: 'done',
    runId: report?.runId ?? '',
    status: report?.status ?? 'none',
    error: report?.error ?? null,
  });
  await pool.end();
}

main().catch((error: unknown) => {
  emit({
    event: 'error',
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  process.exit(1);
});
