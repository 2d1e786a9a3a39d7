import type { Queryable } from '../database/queryable.js';
import { type ApplyOutcome, applyReport } from './applyReport.js';
import { prepareReport } from './prepareReport.js';
import type { RunSettings } from './runSettings.js';
import { createStagingTable } from './stagingTables.js';

/**
 * Everything a run without a report decides: a file source whose glob matched no file (the partner stopped
 * sending them, or they land elsewhere). Its stuck intents still pass the partner's deadline, and some of
 * them have executions an earlier run already stored (rows it read while their lease was still running):
 * left alone, those would stay stuck with nobody told, since they are not `unresolved` either.
 *
 * So it decides exactly as a run with an empty report that declares no coverage, through the same code on
 * empty run tables (the staging tables, then prepareReport and applyReport), never a copy of their rules: a
 * stuck intent with an execution on record is completed from it (collectStoredEvidence, then
 * resolveStuckIntents, fenced as always), with the `duplicate_execution` and `amount_mismatch` a run with a
 * report raises from the same records; one past the deadline with none is `unresolved` (the summary says
 * no report arrived, `why`); nothing is proven absent (no coverage, and `absenceUnprovable`) and no
 * `not_executed` intent is corrected (no row to trust). prepareReport takes the partner's reconciliation
 * lock, as in every run, so this sees what the run before it committed.
 *
 * On the caller's connection, inside the caller's transaction (a dry run rolls it back).
 */
export async function applyNoReport(
  db: Queryable,
  input: { settings: RunSettings; runId: string; source: string; why: string; checkpoint: () => void },
): Promise<ApplyOutcome> {
  const { settings, checkpoint } = input;
  await createStagingTable(db);
  const matching = await prepareReport(db, {
    partner: settings.partner,
    match: settings.match,
    clockSkewMs: settings.clockSkewMs,
    checkpoint,
  });
  checkpoint();
  return applyReport(db, {
    settings,
    matched: matching.matched,
    runId: input.runId,
    source: input.source,
    coverage: null,
    lookup: false,
    absenceUnprovable: true,
    correctionsTrusted: false,
    rowsRejected: 0,
    noReport: input.why,
    checkpoint,
  });
}
