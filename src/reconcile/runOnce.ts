import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient } from 'pg';
import { expectedAccounts } from '../reports/reportAccount.js';
import { capText } from '../shared/capText.js';
import type { Logger } from '../shared/logger.js';
import { withoutCredentials } from '../shared/withoutCredentials.js';
import { decideAbsenceProof } from './absenceProof.js';
import { anonymousExecutionsWarning } from './anonymousExecutions.js';
import { applyNoReport } from './applyNoReport.js';
import { applyReport } from './applyReport.js';
import { fileChecksum, RowChecksum } from './checksum.js';
import { type CoverageDecision, declaredCoverage } from './coverage.js';
import { RunAbandonedError } from './errors/RunAbandonedError.js';
import { RunAbortedError } from './errors/RunAbortedError.js';
import { TooManyRejectedRowsError } from './errors/TooManyRejectedRowsError.js';
import { openReportSource } from './openReportSource.js';
import { prepareReport } from './prepareReport.js';
import {
  emptyResult,
  MAX_RECORDED_REJECTIONS,
  type ReconciliationResult,
  zeroDiscrepancies,
  zeroRowsByKind,
} from './reconciliationResult.js';
import { recordOtherRows } from './recordOtherRows.js';
import { rejectOutsideCoverage } from './rejectOutsideCoverage.js';
import { errorMessage, isAbort, isExpectedFailure } from './runFailure.js';
import { RunHeartbeat } from './runHeartbeat.js';
import { type RunProgressListener, reportProgress } from './runProgress.js';
import type { RunSettings } from './runSettings.js';
import { separateRowKinds } from './separateRowKinds.js';
import { abandonStaleRuns } from './sql/abandonStaleRuns.js';
import { type FinishedReconciliationRun, finishReconciliationRun } from './sql/finishReconciliationRun.js';
import { startReconciliationRun } from './sql/startReconciliationRun.js';
import { type ReportExtent, stageReport } from './stageReport.js';
import { createStagingTable } from './stagingTables.js';

/**
 * work_mem of a run's transaction: large enough that the sorts and hashes over a whole report stay in memory
 * instead of spilling to disk (docs/PERFORMANCE.md, "Staging and deciding a report").
 */
const RUN_WORK_MEM = '64MB';

/**
 * default_statistics_target of a run's transaction, which ANALYZEs its own temp tables (autovacuum never
 * does) so the planner knows their sizes and their few interesting rows. 10 samples 3,000 rows instead of
 * 30,000: an ANALYZE of a million-row run table costs a tenth of what it does at the default of 100, and
 * every statement of the benchmark's million-row run kept its plan (docs/PERFORMANCE.md, "Four cheaper
 * passes", has the figures). What the plans hinge on survives the smaller sample: the row counts, keys that
 * are unique, and a flag true on a few thousand rows of a million (still some rows of the sample).
 */
const RUN_STATISTICS_TARGET = 10;

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
  /** See ReconcileOptions.heartbeatMs. */
  heartbeatMs: number;
  /** See ReconcileOptions.abandonAfterMs. */
  abandonAfterMs: number;
}

/**
 * One report to reconcile: a file (a CSV or a fixed-width file, per the source), or the partner's API
 * (listing or lookups, per the settings); or none, when a file source's glob matched no file (`why` says
 * so in words: "no file matches reports/acme-pay/*.csv"), and the run decides only from what is on record
 * (applyNoReport.ts).
 */
export type RunTarget = { type: 'file'; file: string } | { type: 'api' } | { type: 'none'; why: string };

/**
 * One run, start to finish. The stages, each in its own file; docs/DESIGN.md ("Reconciliation, stage by
 * stage") lists them with the tables each reads and writes:
 *
 *  0. the run row, committed alone (sql/startReconciliationRun.ts: the slot election), its partner's dead
 *     runs closed first (sql/abandonStaleRuns.ts), a heartbeat while it runs (runHeartbeat.ts);
 *  1. on ONE connection, in ONE transaction: the staging tables (stagingTables.ts);
 *  2. the source (openReportSource.ts) and the coverage its delivery declares (coverage.ts); a coverage
 *     the report declares in its own contents (`{ fromReport: true }`) once it has been read;
 *  3. the report streamed into `rec_staged` (stageReport.ts, copyBatch.ts); rows outside the declared
 *     period rejected (rejectOutsideCoverage.ts); the run fails above maxRejectedRatio;
 *  4. matching and identities (prepareReport.ts: matchRows.ts, identifyRows.ts);
 *  5. whether absence can be proven at all (absenceProof.ts);
 *  6. deciding and applying, set-based (applyReport.ts: candidates, evidence, records, resolutions, flags);
 *  7. the run row closed with its outcome inside the transaction, then COMMIT; or ROLLBACK for a dry run, a
 *     failure or an abort (the row is then closed after it): a run applies all of itself or nothing.
 *
 * A run without a report (target `none`) has stages 0 and 7 as any other, and in between only
 * applyNoReport.ts: stages 1, 4 and 6 on an empty report without coverage, so the intents it completes from
 * executions an earlier run stored and the `unresolved` it raises are exactly those such a run decides.
 *
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
  report.noReport = target.type === 'none';
  const log = context.logger.child({ partner: settings.partner, source });

  const abandoned = await abandonStaleRuns(pool, settings.partner, context.abandonAfterMs);
  if (abandoned.length > 0) {
    log.warn(
      { abandoned, abandonAfterMs: context.abandonAfterMs },
      'closed runs whose heartbeat had stopped as abandoned; nothing they did was applied',
    );
  }

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
  const heartbeat = new RunHeartbeat(pool, runId, context.heartbeatMs, log);
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
    extent: {
      rows: 0,
      from: null,
      to: null,
      executionsWithout: { reference: 0, partnerReference: 0 },
    } as ReportExtent,
  };
  const checkpoint = () => {
    if (signal?.aborted) throw new RunAbortedError();
  };
  const runRow = (status: FinishedReconciliationRun['status']): FinishedReconciliationRun => ({
    id: runId,
    status,
    checksum: report.checksum,
    coverageFrom: report.coverage?.from ?? null,
    coverageTo: report.coverage?.to ?? null,
    rowsRead: progress.rowsRead,
    rowsRejected: progress.rowsRejected,
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
  let closedInTransaction = false;
  try {
    checkpoint();
    if (target.type === 'file') report.checksum = await fileChecksum(target.file);
    client = await pool.connect();
    await client.query('BEGIN');
    // Sorts and hashes over a whole report stay in memory instead of spilling; for this transaction only.
    await client.query(`SET LOCAL work_mem = '${RUN_WORK_MEM}'`);
    await client.query(`SET LOCAL default_statistics_target = ${RUN_STATISTICS_TARGET}`);
    if (target.type === 'none') {
      // No report to read: decided from what is on record, as a run with an empty report (applyNoReport).
      const warning = `no report found: ${target.why}; nothing was read or proven absent: only intents whose execution an earlier run stored are completed, and intents stuck past the partner's deadline with none are raised unresolved`;
      report.warnings.push(warning);
      log.warn({ runId }, warning);
      reportProgress(context.onProgress, { phase: 'deciding', runId, source, rowsRead: 0 });
      const outcome = await applyNoReport(client, { settings, runId, source, why: target.why, checkpoint });
      if (outcome.shapeWarning) {
        report.warnings.push(outcome.shapeWarning);
        log.warn({ runId }, outcome.shapeWarning);
      }
      report.resolved = outcome.resolved;
      report.discrepancies = outcome.discrepancies;
    } else {
      await createStagingTable(client);

      const rowChecksum = target.type === 'api' ? new RowChecksum() : undefined;
      const { items, lookup, window } = await openReportSource(client, {
        settings,
        target,
        env: context.env,
        logger: log,
        signal,
      });

      // Decided before a row is read, from what the report's delivery says (invariant 9): lookups have none
      // (each looked-up intent is covered from its attempt's start), listings the window they asked for. A
      // coverage the report declares in its own contents is known only once it has been read (below).
      const file = target.type === 'file' ? target.file : undefined;
      const fromReport = !lookup && settings.coverage?.type === 'report';
      let declared: CoverageDecision =
        lookup || fromReport
          ? { coverage: null, warning: null }
          : await declaredCoverage(client, { settings, file, window });
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
      if (fromReport) {
        // The transaction's now() is its start, so the cap is the same as if this were decided before reading.
        declared = await declaredCoverage(client, { settings, file, reported: staged.reported });
        if (declared.warning) {
          report.warnings.push(declared.warning);
          log.warn({ runId }, declared.warning);
        }
      }
      // From here on only executions are staged (separateRowKinds says what becomes of the other rows).
      const others = await separateRowKinds(client, {
        partner: settings.partner,
        rowsStaged: staged.extent.rows,
        match: settings.match,
      });
      staged.extent.rows -= others.moved;
      report.rowsByKind = others.byKind;
      const anonymous = await anonymousExecutionsWarning(client, {
        partner: settings.partner,
        match: settings.match,
        executionsWithout: staged.extent.executionsWithout,
      });
      if (declared.coverage) {
        await rejectOutsideCoverage(client, { coverage: declared.coverage, settings, staged });
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
        checkpoint,
      });
      report.coverage = declared.coverage;
      report.ambiguous = matching.ambiguousRows;
      checkpoint();

      // Rows that may be anybody's (separateRowKinds, anonymousExecutions): then nothing is proven absent.
      for (const warning of [others.warning, anonymous]) {
        if (warning === null) continue;
        report.warnings.push(warning);
        log.warn({ runId }, warning);
      }
      const proof = await decideAbsenceProof(client, {
        settings,
        coverage: declared.coverage,
        staged,
        rowsMatching: matching.matched + matching.ambiguousRows,
      });
      if (proof.warning) {
        report.warnings.push(proof.warning);
        log.warn(
          { runId, rowsRejected: staged.rowsRejected, rowsUnidentified: staged.rowsUnidentified },
          proof.warning,
        );
      }
      // A report whose account is not checked may be another account's: it completes what it shows (the
      // account's rows name our references) but proves nothing absent.
      const account = uncheckedAccount(settings, context.env ?? process.env);
      if (account) {
        report.warnings.push(account);
        log.warn({ runId }, account);
      }
      const absenceUnprovable =
        !proof.possible || others.warning !== null || anonymous !== null || account !== null;
      // Overturning a settlement (correctLateExecutions) needs a row that is surely this intent's: matched on
      // our reference or the partner's (never amount and time alone), in a report of this partner's account
      // that looks like this partner's.
      const correctionsTrusted =
        settings.match.by !== 'amount' && account === null && proof.implausible !== true;
      const outcome = await applyReport(client, {
        settings,
        matched: matching.matched,
        runId,
        source,
        coverage: report.coverage,
        lookup,
        absenceUnprovable,
        correctionsTrusted,
        rowsRejected: staged.rowsRejected + others.shielding,
        checkpoint,
      });
      if (outcome.shapeWarning) {
        report.warnings.push(outcome.shapeWarning);
        log.warn({ runId }, outcome.shapeWarning);
      }
      const unreversed = await recordOtherRows(client, {
        partner: settings.partner,
        runId,
        partnerReferenceUnique: !(
          settings.match.by === 'reference' && settings.match.partnerReferenceUnique === false
        ),
      });
      if (unreversed) report.warnings.push(unreversed);
      report.matched = outcome.matched;
      report.resolved = outcome.resolved;
      report.corrected = outcome.corrected;
      report.discrepancies = outcome.discrepancies;
    }
    // The last chance to stop: after COMMIT the run has happened.
    checkpoint();
    if (context.dryRun) {
      await client.query('ROLLBACK');
      report.status = 'dry_run';
    } else {
      // The row commits with the changes; it is still ours only if nobody found it stale meanwhile.
      if (!(await finishReconciliationRun(client, runRow('succeeded')))) throw new RunAbandonedError();
      await client.query('COMMIT');
      closedInTransaction = true;
      report.status = 'succeeded';
    }
    timings.decideMs = Math.round(performance.now() - phaseStart);
  } catch (error) {
    if (client) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
    }
    report.status = error instanceof RunAbandonedError ? 'abandoned' : 'failed';
    report.error = signal?.aborted || isAbort(error) ? 'aborted' : errorMessage(error);
    report.matched = 0;
    report.ambiguous = 0;
    report.resolved = { completed: 0, notExecuted: 0 };
    report.corrected = 0;
    report.discrepancies = zeroDiscrepancies();
    report.coverage = null;
    report.rowsByKind = zeroRowsByKind();
    if (isExpectedFailure(error))
      log.warn({ runId, error: report.error }, 'reconciliation run failed; nothing applied');
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
    // After the release: with a pool of one connection, a refresh in flight waits for that connection.
    await heartbeat.stop();
  }

  report.rowsRead = progress.rowsRead;
  report.rowsRejected = progress.rowsRejected;
  report.durationMs = Math.round(performance.now() - startedAt);
  if (!closedInTransaction && report.status !== 'abandoned') {
    const closed = await finishReconciliationRun(pool, runRow(report.status as 'failed' | 'dry_run'));
    if (!closed) {
      // Found stale by another process while it rolled back or failed: the row says abandoned, and so do we.
      report.status = 'abandoned';
      report.error = new RunAbandonedError().message;
    }
  }
  log.info(
    {
      runId,
      status: report.status,
      rowsRead: report.rowsRead,
      rowsRejected: report.rowsRejected,
      matched: report.matched,
      resolved: report.resolved,
      corrected: report.corrected,
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

/** The run's `source` (stored, logged, printed, shown): an API's address never carries its credentials. */
function describeTarget(context: RunContext, target: RunTarget): string {
  if (target.type === 'file') return target.file;
  if (target.type === 'none') return `no report (${target.why})`;
  const source = context.settings.source;
  if (source.type !== 'api') return source.config.path;
  const base = withoutCredentials(source.config.baseUrl).replace(/\/+$/, '');
  if (source.mode === 'lookup') return `${base}${source.config.lookup?.path ?? ''}`;
  return `${base}${source.config.path}`;
}

/** jsonb and text cannot hold NUL characters. */
function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}

/** Why the report's account is not checked (its source names where it is stated, not what it must be), or null. */
function uncheckedAccount(settings: RunSettings, env: NodeJS.ProcessEnv): string | null {
  const account = settings.source.type === 'csv' ? settings.source.config.account : undefined;
  if (account === undefined || expectedAccounts(account, env) !== null) return null;
  return `the report's merchant account is not checked: set ${account.env ?? 'source.account.values'} to this reconciler's account; this run proves no intent absent`;
}
