import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient } from 'pg';
import { PartnerApiError } from '../reports/errors/PartnerApiError.js';
import { ReportFormatError } from '../reports/errors/ReportFormatError.js';
import type { ReportItem } from '../reports/partnerRow.js';
import { readApiReport } from '../reports/readApiReport.js';
import { readCsvReportBatches } from '../reports/readCsvReport.js';
import { capText } from '../shared/capText.js';
import type { Logger } from '../shared/logger.js';
import { withoutCredentials } from '../shared/withoutCredentials.js';
import { applyReport } from './applyReport.js';
import { fileChecksum, RowChecksum } from './checksum.js';
import { type Coverage, configuredCoverage, defaultApiWindow } from './coverage.js';
import { RunAbortedError } from './errors/RunAbortedError.js';
import { TooManyRejectedRowsError } from './errors/TooManyRejectedRowsError.js';
import { lookupStuckIntents } from './lookupStuckIntents.js';
import { prepareReport } from './prepareReport.js';
import {
  emptyResult,
  MAX_RECORDED_REJECTIONS,
  type ReconciliationResult,
  zeroDiscrepancies,
} from './reconciliationResult.js';
import { type RunProgressListener, reportProgress } from './runProgress.js';
import type { RunSettings } from './runSettings.js';
import { finishReconciliationRun } from './sql/finishReconciliationRun.js';
import { startReconciliationRun } from './sql/startReconciliationRun.js';
import {
  createStagingTable,
  oneByOne,
  type ReportExtent,
  type StageResult,
  stageReport,
} from './stageReport.js';

/** work_mem of a run's transaction: a 1M-row report sorts and hashes in memory at this size. */
const RUN_WORK_MEM = '64MB';

/** What every run of one `reconcile()` call shares. */
export interface RunContext {
  pool: Pool;
  settings: RunSettings;
  dryRun: boolean;
  trigger: 'schedule' | 'manual';
  owner: string;
  signal?: AbortSignal;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /** See ReconcileOptions.onProgress. */
  onProgress?: RunProgressListener;
}

/** One report to reconcile: a CSV file, or the partner's API (listing or lookups, per the settings). */
export type RunTarget = { type: 'csv'; file: string } | { type: 'api' };

/**
 * One run, start to finish:
 * 1. the run row is inserted as `running` on its own (committed at once; for a scheduled run this is also
 *    the slot election, and losing it returns `skipped` before anything is read);
 * 2. on ONE connection, in ONE transaction: the report is streamed into a temp table, checked against
 *    maxRejectedRatio, identified, and everything is decided and applied set-based (see applyReport);
 * 3. COMMIT, or ROLLBACK for a dry run, a failure or an abort: a run applies all of itself or nothing;
 * 4. the run row is closed with the outcome.
 * Report problems (ReportFormatError, PartnerApiError, too many rejected rows, abort) end as a `failed`
 * run with the reason in `error`; only a database that cannot record the run at all throws.
 */
export async function runOnce(
  context: RunContext,
  target: RunTarget,
  slot: Date | null,
): Promise<ReconciliationResult> {
  const startedAt = performance.now();
  const { settings, pool, signal } = context;
  const source = describeTarget(context, target);
  const report = emptyResult(settings.partner, source);
  const log = context.logger.child({ partner: settings.partner, source });

  const runId = await startReconciliationRun(pool, {
    partner: settings.partner,
    trigger: context.trigger,
    slot,
    source,
    owner: context.owner,
  });
  if (runId === null) {
    log.info({ slot }, 'reconciliation slot already taken: skipped');
    return { ...report, status: 'skipped', durationMs: Math.round(performance.now() - startedAt) };
  }
  report.runId = runId;
  log.info({ runId, dryRun: context.dryRun }, 'reconciliation run started');
  reportProgress(context.onProgress, { phase: 'reading', runId, source, rowsRead: 0 });

  let client: PoolClient | undefined;
  let broken = false;
  // Where the time went: reading and staging the report, then deciding and applying (for operators).
  const timings = { readMs: 0, decideMs: 0 };
  let phaseStart = performance.now();
  // Filled while reading, so a run stopped halfway still says how far it got.
  const progress = {
    rowsRead: 0,
    rowsRejected: 0,
    rejected: report.rejected,
    rowsUnidentified: 0,
    extent: { rows: 0, from: null, to: null } as ReportExtent,
  };
  const checkpoint = () => {
    if (signal?.aborted) throw new RunAbortedError();
  };
  try {
    checkpoint();
    if (target.type === 'csv') report.checksum = await fileChecksum(target.file);
    client = await pool.connect();
    await client.query('BEGIN');
    // Sorts and hashes over a whole report stay in memory instead of spilling; for this transaction only.
    await client.query(`SET LOCAL work_mem = '${RUN_WORK_MEM}'`);
    await createStagingTable(client);

    const rowChecksum = target.type === 'api' ? new RowChecksum() : undefined;
    let window: Coverage | undefined;
    let items: AsyncIterable<readonly ReportItem[]>;
    const lookup =
      target.type === 'api' && settings.source.type === 'api' && settings.source.mode === 'lookup';
    if (target.type === 'csv' && settings.source.type === 'csv') {
      items = readCsvReportBatches(target.file, settings.source.config, { timezone: settings.timezone });
    } else if (settings.source.type === 'api' && lookup) {
      items = oneByOne(
        lookupStuckIntents(client, {
          partner: settings.partner,
          source: settings.source.config,
          stuckAfterMs: settings.stuckAfterMs,
          timezone: settings.timezone,
          env: context.env,
          logger: log,
          signal,
        }),
      );
    } else if (settings.source.type === 'api') {
      window = settings.coverage
        ? await configuredCoverage(client, settings.coverage)
        : await defaultApiWindow(client, settings);
      items = oneByOne(
        readApiReport(settings.source.config, {
          partner: settings.partner,
          timezone: settings.timezone,
          env: context.env,
          logger: log,
          signal,
          window,
        }),
      );
    } else {
      throw new TypeError(
        `reconciler ${settings.partner}: a file was given for a ${settings.source.type} source`,
      );
    }

    const staged = await stageReport(
      client,
      items,
      {
        signal,
        onRow: rowChecksum && ((row) => rowChecksum.add(row)),
        onBatch: (rowsRead) => {
          log.debug({ runId, rowsRead }, 'report batch staged');
          reportProgress(context.onProgress, { phase: 'reading', runId, source, rowsRead });
        },
      },
      progress,
    );
    if (rowChecksum) report.checksum = rowChecksum.digest();
    timings.readMs = Math.round(performance.now() - phaseStart);
    phaseStart = performance.now();
    if (staged.rowsRead > 0 && staged.rowsRejected / staged.rowsRead > settings.maxRejectedRatio) {
      throw new TooManyRejectedRowsError(staged.rowsRejected, staged.rowsRead, settings.maxRejectedRatio);
    }
    reportProgress(context.onProgress, { phase: 'deciding', runId, source, rowsRead: staged.rowsRead });
    checkpoint();

    const matched = await prepareReport(client, settings.partner, settings.match);
    report.coverage = await coverageOf(client, { settings, window, lookup, extent: staged.extent });
    checkpoint();

    const absenceUnprovable = rejectionsHideIntents(settings, staged);
    if (absenceUnprovable) {
      log.warn(
        { runId, rowsRejected: staged.rowsRejected, rowsUnidentified: staged.rowsUnidentified },
        'rejected rows could be executions of any intent: this run proves no intent absent',
      );
    }
    const outcome = await applyReport(client, {
      settings,
      matched,
      runId,
      source,
      coverage: report.coverage,
      lookup,
      absenceUnprovable,
      rowsRejected: staged.rowsRejected,
      checkpoint,
    });
    report.matched = outcome.matched;
    report.resolved = outcome.resolved;
    report.discrepancies = outcome.discrepancies;
    // The last chance to stop: after COMMIT the run has happened.
    checkpoint();
    await client.query(context.dryRun ? 'ROLLBACK' : 'COMMIT');
    timings.decideMs = Math.round(performance.now() - phaseStart);
    report.status = context.dryRun ? 'dry_run' : 'succeeded';
  } catch (error) {
    if (client) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
    }
    report.status = 'failed';
    report.error = signal?.aborted || isAbort(error) ? 'aborted' : errorMessage(error);
    report.matched = 0;
    report.resolved = { completed: 0, notExecuted: 0 };
    report.discrepancies = zeroDiscrepancies();
    report.coverage = null;
    const expected =
      error instanceof RunAbortedError || error instanceof TooManyRejectedRowsError || isReportProblem(error);
    if (expected) log.warn({ runId, error: report.error }, 'reconciliation run failed; nothing applied');
    else
      log.error(
        {
          runId,
          err: {
            message: errorMessage(error),
            stack: capText(withoutCredentials(String((error as Error)?.stack ?? ''))),
          },
        },
        'run failed',
      );
  } finally {
    client?.release(broken);
  }

  report.rowsRead = progress.rowsRead;
  report.rowsRejected = progress.rowsRejected;
  report.durationMs = Math.round(performance.now() - startedAt);
  await finishReconciliationRun(pool, {
    id: runId,
    status: report.status as 'succeeded' | 'failed' | 'dry_run',
    checksum: report.checksum,
    coverageFrom: report.coverage?.from ?? null,
    coverageTo: report.coverage?.to ?? null,
    rowsRead: report.rowsRead,
    rowsRejected: report.rowsRejected,
    matched: report.matched,
    resolvedCompleted: report.resolved.completed,
    resolvedNotExecuted: report.resolved.notExecuted,
    discrepancies: report.discrepancies,
    rejected: report.rejected.slice(0, MAX_RECORDED_REJECTIONS).map((row) => ({
      line: row.line,
      field: withoutNul(row.field),
      reason: withoutNul(row.reason),
    })),
    error: report.error === null ? null : withoutNul(report.error),
  });
  log.info(
    {
      runId,
      status: report.status,
      rowsRead: report.rowsRead,
      rowsRejected: report.rowsRejected,
      matched: report.matched,
      resolved: report.resolved,
      discrepancies: report.discrepancies,
      durationMs: report.durationMs,
      ...timings,
    },
    'reconciliation run finished',
  );
  reportProgress(context.onProgress, {
    phase: 'done',
    runId,
    source,
    rowsRead: report.rowsRead,
    status: report.status,
  });
  return report;
}

/**
 * The span the report is complete for. An explicit `coverage` wins; else a CSV covers its first to its
 * last execution and an API listing the window it was asked for. A report without a single accepted row
 * proves nothing by itself, whatever its claimed span. Lookup mode has no run-wide coverage: each looked-up
 * intent is covered from its attempt start until now.
 */
async function coverageOf(
  client: PoolClient,
  input: {
    settings: RunSettings;
    window: Coverage | undefined;
    lookup: boolean;
    extent: ReportExtent;
  },
): Promise<Coverage | null> {
  const { settings, extent } = input;
  if (input.lookup || extent.rows === 0) return null;
  if (settings.coverage) return configuredCoverage(client, settings.coverage);
  if (input.window) return input.window;
  return extent.from && extent.to ? { from: extent.from, to: extent.to } : null;
}

/**
 * Whether the run's rejected records leave every intent's absence unproven: some could not be read far
 * enough to say which intent they are about, or intents are matched by amount and time (which a rejected
 * record's bad amount or time may hide). Identified rejections only shield their own intents (see
 * collectCandidates).
 */
function rejectionsHideIntents(settings: RunSettings, staged: StageResult): boolean {
  if (staged.rowsUnidentified > 0) return true;
  return settings.match.by === 'amount' && staged.rowsRejected > 0;
}

/** The run's `source` (stored, logged, printed, shown): an API's address never carries its credentials. */
function describeTarget(context: RunContext, target: RunTarget): string {
  if (target.type === 'csv') return target.file;
  const source = context.settings.source;
  if (source.type !== 'api') return source.config.path;
  const base = withoutCredentials(source.config.baseUrl).replace(/\/+$/, '');
  if (source.mode === 'lookup') return `${base}${source.config.lookup?.path ?? ''}`;
  return `${base}${source.config.path}`;
}

function isAbort(error: unknown): boolean {
  return error instanceof RunAbortedError || (error instanceof PartnerApiError && error.code === 'aborted');
}

function isReportProblem(error: unknown): boolean {
  return (
    error instanceof ReportFormatError ||
    error instanceof PartnerApiError ||
    (error as NodeJS.ErrnoException)?.code === 'ENOENT'
  );
}

/** The error as stored and logged: no URL credentials, and capped ({@link capText}). */
function errorMessage(error: unknown): string {
  return capText(withoutCredentials(error instanceof Error ? error.message : String(error)));
}

/** jsonb and text cannot hold NUL characters. */
function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}
