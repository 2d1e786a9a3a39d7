/**
 * One worker process of bench/reconcileScaling.ts: a ReconciliationWorker over the database `intent-ledger
 * worker` opens (openCliDatabase: the same pool and timeouts), fired by the parent over stdin instead of by
 * its cron, so that every worker of a configuration starts the same slot at the same moment.
 *
 * Usage: DATABASE_URL=... node reconcileScalingChild.js <owner> <reconcilersDir>. Prints `ready` once the
 * reconcilers are loaded and a connection is open; then reads one line `go <slot ISO> one-by-one|at-once`,
 * fires every partner's slot (in name order, one after another, or all at once, as its cron ticks when they
 * fall due together) and prints one JSON line ({@link WorkerOutcome}); it exits when stdin ends.
 */
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import pino from 'pino';
import { openCliDatabase } from '../src/cli/openCliDatabase.js';
import { loadReconcilers } from '../src/reconcile/loadReconcilers.js';
import type { ReconciliationResult } from '../src/reconcile/reconciliationResult.js';
import { ReconciliationWorker } from '../src/reconcile/reconciliationWorker.js';

/** What one fire of one partner's slot did in this worker. */
export interface FiredSlot {
  partner: string;
  /** Epoch ms around `fire()`, to place the run beside the other worker's. */
  startedAtMs: number;
  finishedAtMs: number;
  /** The reports the worker was told of (`onRun`), `rejected` left out: one per run, `skipped` included. */
  reports: Omit<ReconciliationResult, 'rejected'>[];
}

export interface WorkerOutcome {
  owner: string;
  fired: FiredSlot[];
  /** CPU of this process over the fires, ms (user + system). */
  cpuMs: number;
}

async function main(): Promise<void> {
  const [owner, dir] = process.argv.slice(2);
  if (!owner || !dir || !process.env.DATABASE_URL)
    throw new Error('usage: DATABASE_URL=... reconcileScalingChild <owner> <reconcilersDir>');
  const reconcilers = (await loadReconcilers(dir)).map((loaded) => loaded.config);
  const database = await openCliDatabase({ migrate: false });
  try {
    await database.pool.query('SELECT 1');
    const told = new Map<string, Omit<ReconciliationResult, 'rejected'>[]>(
      reconcilers.map((reconciler) => [reconciler.partner, []]),
    );
    const worker = new ReconciliationWorker({
      pool: database.pool,
      reconcilers,
      owner,
      logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2)),
      onRun: ({ rejected: _, ...report }) => told.get(report.partner)?.push(report),
    });
    const lines = createInterface({ input: process.stdin });
    process.stdout.write('ready\n');
    const closed = once(lines, 'close');
    // Told to stop before `go` (another worker failed to start): nothing to do.
    const first = await Promise.race([once(lines, 'line'), closed.then(() => undefined)]);
    if (first === undefined) return;
    const [line] = first as [string];
    const [command, slotIso, firing] = line.trim().split(' ');
    if (command !== 'go' || (firing !== 'one-by-one' && firing !== 'at-once'))
      throw new Error(`unknown command ${line}`);
    const slot = new Date(slotIso);
    const cpuBefore = process.cpuUsage();
    const fireOne = async (reconciler: (typeof reconcilers)[number]): Promise<FiredSlot> => {
      const startedAtMs = Date.now();
      await worker.fire(reconciler, slot);
      return {
        partner: reconciler.partner,
        startedAtMs,
        finishedAtMs: Date.now(),
        reports: told.get(reconciler.partner) ?? [],
      };
    };
    const fired: FiredSlot[] = [];
    if (firing === 'at-once') fired.push(...(await Promise.all(reconcilers.map(fireOne))));
    else for (const reconciler of reconcilers) fired.push(await fireOne(reconciler));
    const cpu = process.cpuUsage(cpuBefore);
    await worker.stop();
    const outcome: WorkerOutcome = { owner, fired, cpuMs: (cpu.user + cpu.system) / 1000 };
    process.stdout.write(`${JSON.stringify(outcome)}\n`);
    // Connections stay open until the parent has read the server's CPU: a backend that exits takes its CPU with it.
    await closed;
  } finally {
    await database.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
