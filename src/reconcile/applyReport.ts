import { lockPartnerReconciliation } from '../sql/lockPartnerReconciliation.js';
import type { Queryable } from '../sql/queryable.js';
import { collectCandidates, collectEvidence } from './collectCandidates.js';
import type { Coverage } from './coverage.js';
import { flagDiscrepancies } from './flagDiscrepancies.js';
import { matchRows } from './matchRows.js';
import { raiseFlags } from './raiseFlags.js';
import { type Resolution, resolveStuckIntents } from './resolveStuckIntents.js';
import type { ReconcilerDiscrepancyKind } from './runReport.js';
import type { RunSettings } from './runSettings.js';
import { storePartnerRecords } from './storePartnerRecords.js';

export interface ApplyOutcome {
  matched: number;
  resolved: Resolution;
  discrepancies: Record<ReconcilerDiscrepancyKind, number>;
}

/**
 * Everything a run decides, once `rec_report` holds the report: match, remember the rows, settle stuck
 * intents, raise discrepancies. All of it runs on the caller's connection inside the caller's
 * transaction, which commits it all or nothing. `checkpoint` is called between steps (it throws to stop).
 */
export async function applyReport(
  db: Queryable,
  input: {
    settings: RunSettings;
    runId: string;
    source: string;
    coverage: Coverage | null;
    lookup: boolean;
    checkpoint: () => void;
  },
): Promise<ApplyOutcome> {
  const { settings, runId, checkpoint } = input;
  const partner = settings.partner;
  const actor = `reconciler:run-${runId}`;
  // From here on the run reads and writes intents: one run of a partner at a time.
  await lockPartnerReconciliation(db, partner);
  checkpoint();
  const matched = await matchRows(db, partner, settings.match);
  checkpoint();
  await storePartnerRecords(db, { partner, runId, source: input.source });
  checkpoint();
  const common = {
    partner,
    stuckAfterMs: settings.stuckAfterMs,
    coverage: input.coverage,
    lookup: input.lookup,
  };
  await collectCandidates(db, {
    ...common,
    match: settings.match,
    settlementLagMs: settings.settlementLagMs,
    deadlineMs: settings.deadlineMs,
  });
  await collectEvidence(db, partner);
  checkpoint();
  const resolved = await resolveStuckIntents(db, {
    partner,
    stuckAfterMs: settings.stuckAfterMs,
    resolvedBy: actor,
    runId,
  });
  checkpoint();
  await flagDiscrepancies(db, common);
  const discrepancies = await raiseFlags(db, { partner, runId, actor });
  return { matched, resolved, discrepancies };
}
