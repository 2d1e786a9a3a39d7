import { hostname } from 'node:os';
import { type ScheduledTask, schedule } from 'node-cron';
import type { Pool } from 'pg';
import { ConcurrencyLimit } from '../shared/concurrencyLimit.js';
import type { Logger } from '../shared/logger.js';
import { reconcile } from './reconcile.js';
import type { ReconcilerConfig } from './reconcilerConfig.js';
import type { ReconciliationResult } from './reconciliationResult.js';

export interface WorkerOptions {
  pool: Pool;
  reconcilers: ReconcilerConfig[];
  logger: Logger;
  /** Recorded on runs and slots. @default `${hostname}:${pid}` */
  owner?: string;
  /** Where API tokens are read from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * On stop, how long an in-flight run may take to finish before it is aborted (an aborted run rolls back
   * entirely: nothing half-applied).
   * @default 10000
   */
  gracefulStopMs?: number;
  /** See ReconcileOptions.heartbeatMs. @default 5000 */
  heartbeatMs?: number;
  /**
   * See ReconcileOptions.abandonAfterMs: each tick first closes its partner's runs whose heartbeat is older
   * than this as `abandoned`, whichever worker wins the slot.
   * @default three heartbeats, at least 30000
   */
  abandonAfterMs?: number;
  /** Told of every run this worker made (for its metrics), skipped slots included. */
  onRun?: (report: ReconciliationResult) => void;
  /**
   * How many runs this worker has in flight at once; slots fired beyond it wait their turn (and may be
   * taken meanwhile by another worker, which then runs them). Each run holds one of the pool's connections
   * for its whole transaction, and its heartbeat borrows another every heartbeatMs: with every connection
   * held by a run, the heartbeats (and the metrics' health check) would wait behind the runs, and a run
   * whose heartbeat stops is closed as abandoned by the next run of its partner.
   * @default half of the pool's connections, at least 1
   */
  maxConcurrentRuns?: number;
}

/** The default of WorkerOptions.maxConcurrentRuns for `pool`: the other half stays free for heartbeats. */
function defaultMaxConcurrentRuns(pool: Pool): number {
  return Math.max(1, Math.floor(pool.options.max / 2));
}

/**
 * Runs every reconciler on its node-cron schedule. Any number of workers may run on any number of machines:
 * each slot of each partner is elected in PostgreSQL (the run row's unique (partner, slot), see
 * migrations/0002-reconciliation.ts), so it runs exactly once.
 */
export class ReconciliationWorker {
  private readonly tasks: ScheduledTask[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private readonly owner: string;
  private readonly runs: ConcurrencyLimit;
  private stopping: Promise<void> | undefined;

  constructor(private readonly options: WorkerOptions) {
    this.owner = options.owner ?? `${hostname()}:${process.pid}`;
    this.runs = new ConcurrencyLimit(options.maxConcurrentRuns ?? defaultMaxConcurrentRuns(options.pool));
    if (this.runs.limit >= options.pool.options.max) {
      options.logger.warn(
        { maxConcurrentRuns: this.runs.limit, poolMax: options.pool.options.max },
        'maxConcurrentRuns is not below the pool size: with every connection held by a run, heartbeats wait ' +
          'behind the runs and a live run may be closed as abandoned',
      );
    }
  }

  /** Schedules every reconciler. */
  start(): void {
    for (const reconciler of this.options.reconcilers) {
      const task = schedule(reconciler.schedule, (context) => this.fire(reconciler, context.date), {
        name: `reconcile:${reconciler.partner}`,
        timezone: reconciler.timezone ?? 'UTC',
        // Per process only; across processes the slot election below is what counts.
        noOverlap: true,
      });
      this.tasks.push(task);
    }
    this.options.logger.info(
      { owner: this.owner, partners: this.options.reconcilers.map((r) => `${r.partner} (${r.schedule})`) },
      'reconciliation worker started',
    );
  }

  /**
   * Runs one partner's slot now, if this worker wins its election. Exposed for tests and for `--now`;
   * the cron ticks call the same thing.
   */
  fire(reconciler: ReconcilerConfig, slot: Date): Promise<void> {
    if (this.stopping) return Promise.resolve();
    if (this.runs.active >= this.runs.limit) {
      this.options.logger.info(
        { partner: reconciler.partner, slot, inFlight: this.runs.active, maxConcurrentRuns: this.runs.limit },
        'slot waits for a run of this worker to finish',
      );
    }
    // A slot still waiting for its turn when the worker stops is not started (runSlot checks).
    const run = this.runs.run(() => this.runSlot(reconciler, slot));
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
    return run;
  }

  /** Stops scheduling, lets an in-flight run finish (or aborts it after `gracefulStopMs`). Safe to call twice. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const task of this.tasks) await task.destroy();
      const finished = Promise.allSettled([...this.inFlight]);
      const timer = setTimeout(
        () => this.abort.abort(new Error('worker stopping')),
        this.options.gracefulStopMs ?? 10_000,
      );
      await finished;
      clearTimeout(timer);
      this.options.logger.info({ owner: this.owner }, 'reconciliation worker stopped');
    })();
    return this.stopping;
  }

  private async runSlot(reconciler: ReconcilerConfig, slot: Date): Promise<void> {
    const log = this.options.logger;
    const partner = reconciler.partner;
    if (this.stopping) {
      log.info({ partner, slot }, 'worker stopping: slot not started');
      return;
    }
    try {
      const reports = await reconcile({
        pool: this.options.pool,
        reconciler,
        trigger: 'schedule',
        slot,
        owner: this.owner,
        signal: this.abort.signal,
        logger: log,
        env: this.options.env ?? process.env,
        heartbeatMs: this.options.heartbeatMs,
        abandonAfterMs: this.options.abandonAfterMs,
      });
      for (const report of reports) {
        this.options.onRun?.(report);
        if (report.status === 'skipped') {
          log.debug({ partner, slot }, 'slot taken by another worker');
          continue;
        }
        const entry = {
          partner,
          runId: report.runId,
          status: report.status,
          noReport: report.noReport,
          rowsRead: report.rowsRead,
          rowsRejected: report.rowsRejected,
          resolved: report.resolved,
          discrepancies: report.discrepancies,
        };
        if (report.status === 'failed')
          log.error({ ...entry, error: report.error }, 'reconciliation run failed');
        // A partner that stopped sending files is an operator's business before it is finance's: said loudly,
        // with what was looked for (a path, never anybody's data), what it completed and the unresolved it raised.
        else if (report.noReport)
          log.warn(
            { ...entry, source: report.source, unresolved: report.discrepancies.unresolved },
            'reconciliation run without a report: no file matched, decided only from what is on record',
          );
        else log.info(entry, 'reconciliation run finished');
      }
    } catch (error) {
      log.error({ partner, slot, err: { message: (error as Error).message } }, 'reconciliation slot failed');
    }
  }
}
