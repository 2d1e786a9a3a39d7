import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadReconciler, reconcilersDir } from '../../reconcile/loadReconcilers.js';
import { type ReconciliationResult, reconcile } from '../../reconcile/reconcile.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { createReconcileProgress } from '../reconcileProgress.js';

export const reconcileUsage =
  'intent-ledger reconcile <partner> [--file PATH] [--dry-run] [--json] [--reconcilers DIR]   reconcile one partner now';

/**
 * `intent-ledger reconcile`: one reconciliation now. Exit 0 when every run succeeded (with or without
 * discrepancies) or was a dry run, 1 when one failed, 2 on usage errors. From a terminal, without `--json`,
 * each run's progress (rows read, then deciding) is drawn on stderr.
 */
export async function reconcileCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args);
  if (positionals.length !== 1) throw new UsageError('reconcile takes exactly one partner name');
  const [partner] = positionals;
  const { config } = await loadReconciler(reconcilersDir(values.reconcilers), partner);
  const database = await openCliDatabase();
  const abort = new AbortController();
  const onSignal = () => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const progress = createReconcileProgress({ enabled: process.stderr.isTTY === true && !values.json });
  try {
    const reports = await reconcile({
      pool: database.pool,
      reconciler: config,
      file: values.file,
      dryRun: values['dry-run'],
      trigger: 'manual',
      signal: abort.signal,
      logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2)),
      env: process.env,
      onProgress: progress.onProgress,
    });
    progress.finish();
    if (values.json) {
      const out = reports.map(toJson);
      console.log(JSON.stringify(out.length === 1 ? out[0] : out, null, 2));
    } else {
      for (const report of reports) printReport(report);
    }
    return reports.some((report) => report.status === 'failed' || report.status === 'abandoned') ? 1 : 0;
  } finally {
    progress.finish();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await database.close();
  }
}

/** The `--json` contract (README "reconcile --json"). */
function toJson(report: ReconciliationResult) {
  return {
    runId: report.runId,
    partner: report.partner,
    source: report.source,
    noReport: report.noReport,
    status: report.status,
    rowsRead: report.rowsRead,
    rowsRejected: report.rowsRejected,
    rejected: report.rejected,
    rowsByKind: report.rowsByKind,
    matched: report.matched,
    ambiguous: report.ambiguous,
    resolved: report.resolved,
    corrected: report.corrected,
    discrepancies: report.discrepancies,
    coverage: report.coverage,
    warnings: report.warnings,
    error: report.error,
  };
}

function printReport(report: ReconciliationResult): void {
  const flagged = Object.entries(report.discrepancies)
    .filter(([, count]) => count > 0)
    .map(([kind, count]) => `${kind} ${count}`);
  console.log(`run ${report.runId} ${report.partner} ${report.status}: ${report.source}`);
  if (report.noReport) {
    // Nothing was read: the news is what was completed from executions already on record, and how many
    // stuck intents a person now has to look at (with what those records showed wrong).
    const others = flagged.filter((entry) => !entry.startsWith('unresolved '));
    console.log(
      `  no report found: nothing read or proven absent; completed ${report.resolved.completed} from executions already on record; new discrepancies: unresolved ${report.discrepancies.unresolved} (intents stuck past the partner's deadline)${others.length ? `, ${others.join(', ')}` : ''}`,
    );
    if (report.error) console.log(`  error: ${report.error}`);
    return;
  }
  console.log(`  rows read ${report.rowsRead}, rejected ${report.rowsRejected}, matched ${report.matched}`);
  const kinds = report.rowsByKind;
  if (kinds.reversal + kinds.failed + kinds.ignored > 0) {
    console.log(
      `  accepted rows: executions ${kinds.execution}, reversals ${kinds.reversal}, failed ${kinds.failed}, ignored ${kinds.ignored}`,
    );
  }
  console.log(
    `  resolved: completed ${report.resolved.completed}, not executed ${report.resolved.notExecuted}`,
  );
  if (report.corrected > 0)
    console.log(
      `  corrected: ${report.corrected} not executed intents the report shows executed, now completed`,
    );
  console.log(`  new discrepancies: ${flagged.length ? flagged.join(', ') : 'none'}`);
  // Why the run proved less than it might have (no coverage, a file cut short, an implausible report):
  // the reason intents stay stuck, so it is printed, not only logged.
  for (const warning of report.warnings) console.log(`  warning: ${warning}`);
  for (const row of report.rejected.slice(0, 20))
    console.log(`  rejected line ${row.line}, ${row.field}: ${row.reason}`);
  if (report.rejected.length > 20)
    console.log(`  ... and ${report.rejected.length - 20} more rejected rows (use --json)`);
  if (report.error) console.log(`  error: ${report.error}`);
}

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        file: { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        reconcilers: { type: 'string' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
