import { hostname } from 'node:os';
import type { Pool } from 'pg';
import { createDefaultLogger, type Logger } from '../shared/logger.js';
import { expandReportFiles } from './expandReportFiles.js';
import type { ReconcilerConfig } from './reconcilerConfig.js';
import type { ReconciliationResult } from './reconciliationResult.js';
import { DEFAULT_RUN_HEARTBEAT_MS, defaultAbandonAfterMs } from './runHeartbeat.js';
import { type RunContext, type RunTarget, runOnce } from './runOnce.js';
import type { RunProgressListener } from './runProgress.js';
import { resolveRunSettings } from './runSettings.js';

export type { ReconciliationResult, RunReport } from './reconciliationResult.js';
export type { RunProgress } from './runProgress.js';

export interface ReconcileOptions {
  /** The ledger's database. */
  pool: Pool;
  reconciler: ReconcilerConfig;
  /**
   * A report file to reconcile instead of the source's `path` (which may be a glob). One that does not exist
   * is a failed run, never a run without a report.
   */
  file?: string;
  /** Decide everything, report it, change nothing (the run is recorded as `dry_run`). */
  dryRun?: boolean;
  /** @default 'manual' */
  trigger?: 'schedule' | 'manual';
  /**
   * The cron slot of a scheduled run. The run row is inserted with (partner, slot); if another worker holds
   * the slot already, the call returns one `skipped` report without reading anything.
   */
  slot?: Date;
  /** Recorded on the run row. @default `${hostname}:${pid}` */
  owner?: string;
  /** Stops the run: reading ends, everything is rolled back, the run is recorded as failed `aborted`. */
  signal?: AbortSignal;
  /** @default pino at LOG_LEVEL */
  logger?: Logger;
  /** Where API tokens are read from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Called as each run advances: `reading` with the rows read so far (at the start, then after every staged
   * batch, at most 5,000 rows apart), `deciding` once the report is staged, `done` with the run's status.
   * For progress bars; an exception it throws is ignored.
   * @default none
   */
  onProgress?: RunProgressListener;
  /**
   * How often a running run writes `heartbeat_at = now()` on its row, over a pooled connection of its own
   * (so `pool` needs one more connection than the run's). Keep it the same on every process.
   * @default 5000
   */
  heartbeatMs?: number;
  /**
   * Before each run, this partner's runs still `running` whose heartbeat is older than this (in PostgreSQL's
   * now()) are closed as `abandoned`: their process died, and nothing they did was applied. Must be at least
   * twice `heartbeatMs`; keep it the same on every process.
   * @default three heartbeats, at least 30000
   */
  abandonAfterMs?: number;
  /** Time always comes from PostgreSQL's now(). */
  now?: never;
}

/**
 * Reconciles one partner: every file its CSV source names (each its own run, in natural name order, batch_9 before batch_10; `file`
 * overrides the glob), or one read of its API. Returns one report per run. A glob that matches no file is
 * one run without a report (`noReport`): it completes the stuck intents whose execution an earlier run
 * stored, raises `unresolved` for those stuck past the partner's deadline with none, and proves nothing
 * absent (a `file` that does not exist is a failed run, as before). Runs after an
 * aborted one are not started. Throws only for a configuration that cannot work (bad durations, a `file`
 * for an API source) or a database that cannot record runs.
 */
export async function reconcile(options: ReconcileOptions): Promise<ReconciliationResult[]> {
  const settings = resolveRunSettings(options.reconciler);
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_RUN_HEARTBEAT_MS;
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 10) {
    throw new RangeError(
      `heartbeatMs must be a whole number of milliseconds, at least 10 (got ${heartbeatMs})`,
    );
  }
  const abandonAfterMs = options.abandonAfterMs ?? defaultAbandonAfterMs(heartbeatMs);
  if (!Number.isInteger(abandonAfterMs) || abandonAfterMs < 2 * heartbeatMs) {
    throw new RangeError(
      `abandonAfterMs must be a whole number of milliseconds, at least twice heartbeatMs (${2 * heartbeatMs}); got ${abandonAfterMs}`,
    );
  }
  const context: RunContext = {
    pool: options.pool,
    settings,
    dryRun: options.dryRun ?? false,
    trigger: options.trigger ?? 'manual',
    owner: options.owner ?? `${hostname()}:${process.pid}`,
    signal: options.signal,
    logger: options.logger ?? createDefaultLogger(),
    env: options.env,
    onProgress: options.onProgress,
    heartbeatMs,
    abandonAfterMs,
  };

  let targets: RunTarget[];
  if (settings.source.type === 'csv' || settings.source.type === 'fixedWidth') {
    const path = settings.source.config.path;
    const files = options.file !== undefined ? [options.file] : await expandReportFiles(path);
    // No file is no report, and still a run: intents past their deadline must reach a person all the same,
    // and the run is elected by its slot, recorded and locked like any other (runOnce, applyNoReport).
    targets =
      files.length > 0
        ? files.map((file) => ({ type: 'file', file }))
        : [{ type: 'none', why: `no file matches ${path}` }];
  } else {
    if (options.file !== undefined) {
      throw new TypeError(
        `reconciler ${settings.partner}: file only applies to file sources (CSV, fixed width), this one is an API`,
      );
    }
    targets = [{ type: 'api' }];
  }

  const reports: ReconciliationResult[] = [];
  for (const [index, target] of targets.entries()) {
    // The slot elects the invocation: its first run carries it, the later files of a glob run under it.
    const slot = index === 0 ? (options.slot ?? null) : null;
    const report = await runOnce(context, target, slot);
    reports.push(report);
    if (report.status === 'skipped' || report.error === 'aborted') break;
  }
  return reports;
}
