import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient } from 'pg';
import { PartnerApiError } from '../reports/errors/PartnerApiError.js';
import { ReportFormatError } from '../reports/errors/ReportFormatError.js';
import type { ReportItem } from '../reports/partnerRow.js';
import { readApiReport } from '../reports/readApiReport.js';
import { readCsvReportBatches } from '../reports/readCsvReport.js';
import type { Logger } from '../shared/logger.js';
import { applyReport } from './applyReport.js';
import { fileChecksum, RowChecksum } from './checksum.js';
import { apiWindow, type Coverage, type CoverageDecision, declaredCoverage } from './coverage.js';
import { RunAbortedError } from './errors/RunAbortedError.js';
import { TooManyRejectedRowsError } from './errors/TooManyRejectedRowsError.js';
import { judgePlausibility } from './judgePlausibility.js';
import { lookupStuckIntents } from './lookupStuckIntents.js';
import { prepareReport } from './prepareReport.js';
import {
  emptyResult,
  MAX_RECORDED_REJECTIONS,
  MAX_REPORTED_REJECTIONS,
  type ReconciliationResult,
  zeroDiscrepancies,
  zeroRowsByKind,
} from './reconciliationResult.js';
import { recordOtherRows } from './recordOtherRows.js';
import { rejectOutsideCoverage } from './rejectOutsideCoverage.js';
import { type RunProgressListener, reportProgress } from './runProgress.js';
import type { RunSettings } from './runSettings.js';
import { separateRowKinds } from './separateRowKinds.js';
import { finishReconciliationRun } from './sql/finishReconciliationRun.js';
import { startReconciliationRun } from './sql/startReconciliationRun.js';
import {
  createStagingTable,
  oneByOne,
  type ReportExtent,
  type StageResult,
  stageReport,
} from './stageReport.js';

/**
 * work_mem of a run's transaction: large enough that the sorts and hashes over a whole report stay in memory
 * instead of spilling to disk (docs/PERFORMANCE.md, "Staging and deciding a report").
 */
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
      window = await apiWindow(client, settings);
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

    // Decided before a row is read, from what the report's delivery says (invariant 9): lookups have none
    // (each looked-up intent is covered from its attempt's start), listings the window they asked for.
    let declared: CoverageDecision = lookup
      ? { coverage: null, warning: null }
      : await declaredCoverage(client, {
          settings,
          file: target.type === 'csv' ? target.file : undefined,
          window,
        });
    if (declared.warning) {
      report.warnings.push(declared.warning);
      log.warn({ runId }, declared.warning);
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
    // From here on only executions are staged (separateRowKinds says what becomes of the other rows).
    const others = await separateRowKinds(client, { rowsStaged: staged.extent.rows, match: settings.match });
    staged.extent.rows -= others.moved;
    report.rowsByKind = others.byKind;
    if (declared.coverage) {
      const outside = await rejectOutsideCoverage(client, declared.coverage, timeColumnOf(settings));
      staged.rowsRejected += outside.count;
      staged.extent.rows -= outside.count;
      staged.rejected.push(...outside.rejected);
      staged.rejected.sort((a, b) => a.line - b.line);
      staged.rejected.length = Math.min(staged.rejected.length, MAX_REPORTED_REJECTIONS);
      // A report without a single accepted row in its period says nothing about anybody, whatever it declares.
      if (staged.extent.rows === 0) {
        declared = {
          coverage: null,
          warning: 'the report has no accepted row in the period it declares: no intent is proven absent',
        };
        report.warnings.push(declared.warning as string);
        log.warn({ runId }, declared.warning as string);
      }
    }
    timings.readMs = Math.round(performance.now() - phaseStart);
    phaseStart = performance.now();
    if (staged.rowsRead > 0 && staged.rowsRejected / staged.rowsRead > settings.maxRejectedRatio) {
      throw new TooManyRejectedRowsError(staged.rowsRejected, staged.rowsRead, settings.maxRejectedRatio);
    }
    reportProgress(context.onProgress, { phase: 'deciding', runId, source, rowsRead: staged.rowsRead });
    checkpoint();

    const matching = await prepareReport(client, {
      partner: settings.partner,
      match: settings.match,
      clockSkewMs: settings.clockSkewMs,
    });
    report.coverage = declared.coverage;
    report.ambiguous = matching.ambiguousRows;
    checkpoint();

    let absenceUnprovable = others.warning !== null;
    if (others.warning) report.warnings.push(others.warning);
    if (rejectionsHideIntents(settings, staged)) {
      absenceUnprovable = true;
      const warning =
        settings.match.by === 'amount'
          ? `${staged.rowsRejected} rejected rows could be the execution of any intent matched by amount: this run proves no intent absent`
          : `${staged.rowsUnidentified} rejected rows could not be read far enough to say whose they are: this run proves no intent absent`;
      report.warnings.push(warning);
      log.warn(
        { runId, rowsRejected: staged.rowsRejected, rowsUnidentified: staged.rowsUnidentified },
        warning,
      );
    }
    if (declared.coverage && !absenceUnprovable) {
      const implausible = await judgePlausibility(client, {
        partner: settings.partner,
        coverage: declared.coverage,
        rows: staged.extent.rows,
        rowsMatching: matching.matched + matching.ambiguousRows,
        minMatchedShare: settings.minMatchedShare,
        stuckAfterMs: settings.stuckAfterMs,
      });
      if (implausible) {
        absenceUnprovable = true;
        report.warnings.push(implausible);
        log.warn({ runId }, implausible);
      }
    }
    const outcome = await applyReport(client, {
      settings,
      matched: matching.matched,
      runId,
      source,
      coverage: report.coverage,
      lookup,
      absenceUnprovable,
      rowsRejected: staged.rowsRejected + others.shielding,
      checkpoint,
    });
    const unreversed = await recordOtherRows(client, { partner: settings.partner, runId });
    if (unreversed) report.warnings.push(unreversed);
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
    report.ambiguous = 0;
    report.resolved = { completed: 0, notExecuted: 0 };
    report.discrepancies = zeroDiscrepancies();
    report.coverage = null;
    report.rowsByKind = zeroRowsByKind();
    const expected =
      error instanceof RunAbortedError || error instanceof TooManyRejectedRowsError || isReportProblem(error);
    if (expected) log.warn({ runId, error: report.error }, 'reconciliation run failed; nothing applied');
    else
      log.error(
        { runId, err: { message: errorMessage(error), stack: (error as Error)?.stack } },
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
    rowsByKind: report.rowsByKind,
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
    warnings: report.warnings.map(withoutNul),
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

/** The report's own name for its execution-time column, as rejections name it. */
function timeColumnOf(settings: RunSettings): string {
  const source = settings.source;
  const column = source.type === 'csv' ? source.config.columns.executedAt : source.config.fields.executedAt;
  return column ?? 'executedAt';
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

function describeTarget(context: RunContext, target: RunTarget): string {
  if (target.type === 'csv') return target.file;
  const source = context.settings.source;
  if (source.type !== 'api') return source.config.path;
  const base = source.config.baseUrl.replace(/\/+$/, '');
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

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** jsonb and text cannot hold NUL characters. */
function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}
