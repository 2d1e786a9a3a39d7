import type { Queryable } from '../database/queryable.js';
import type { DiscrepancyKind } from '../shared/status.js';
import { flagUnresolvedWithoutReport } from './flagDiscrepancies.js';
import { raiseFlags } from './raiseFlags.js';
import type { RunSettings } from './runSettings.js';
import { lockPartnerReconciliation } from './sql/lockPartnerReconciliation.js';

/**
 * Everything a run without a report decides: a file source whose glob matched no file (the partner stopped
 * sending them, or they land elsewhere). Its stuck intents still pass the partner's deadline, so each one
 * past it with no execution on record is raised `unresolved` for a person, as a run with a report would
 * (invariant 6). Nothing is settled and nothing is proven absent: there is no report to prove anything.
 *
 * Under the partner's reconciliation lock, like every run's decisions, so it sees what the run before it
 * committed; on the caller's connection, inside the caller's transaction (a dry run rolls it back).
 * `why` says in the summaries why there is no report. Returns the new discrepancies by kind.
 */
export async function applyNoReport(
  db: Queryable,
  input: { settings: RunSettings; runId: string; why: string; checkpoint: () => void },
): Promise<Record<DiscrepancyKind, number>> {
  const { settings, runId, checkpoint } = input;
  const partner = settings.partner;
  await lockPartnerReconciliation(db, partner, checkpoint);
  checkpoint();
  await flagUnresolvedWithoutReport(db, {
    partner,
    stuckAfterMs: settings.stuckAfterMs,
    deadlineMs: settings.deadlineMs,
    why: input.why,
  });
  return raiseFlags(db, { partner, runId, actor: `reconciler:run-${runId}` });
}
