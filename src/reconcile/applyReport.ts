import type { Queryable } from '../database/queryable.js';
import type { DiscrepancyKind } from '../shared/status.js';
import { collectCandidates, collectNewEvidence, collectStoredEvidence } from './collectCandidates.js';
import { correctLateExecutions } from './correctLateExecutions.js';
import type { Coverage } from './coverage.js';
import { flagDiscrepancies } from './flagDiscrepancies.js';
import { raiseFlags } from './raiseFlags.js';
import { outOfShapeWarning } from './referenceShape.js';
import { type Resolution, resolveStuckIntents } from './resolveStuckIntents.js';
import type { RunSettings } from './runSettings.js';
import { findKnownRecords, storePartnerRecords } from './storePartnerRecords.js';

export interface ApplyOutcome {
  matched: number;
  resolved: Resolution;
  /** `not_executed` intents corrected to `completed`: the report shows their execution (correctLateExecutions). */
  corrected: number;
  discrepancies: Record<DiscrepancyKind, number>;
  /** About stuck intents whose matched value is outside `match.shape` (referenceShape.ts), or null. */
  shapeWarning: string | null;
}

/**
 * Everything a run decides, once prepareReport has built `rec_report` and `rec_ambiguous` (under the partner's
 * reconciliation lock, still held): collect the candidate intents and what is known of their executions,
 * remember the rows, settle stuck intents, raise discrepancies. All of it runs on the caller's connection
 * inside the caller's transaction, which commits it all or nothing. `checkpoint` is called between steps
 * (it throws to stop).
 */
export async function applyReport(
  db: Queryable,
  input: {
    settings: RunSettings;
    /** Rows prepareReport matched to an intent. */
    matched: number;
    runId: string;
    source: string;
    coverage: Coverage | null;
    lookup: boolean;
    /** Rejected records may hide any intent's execution: no absence is proven (see runOnce). */
    absenceUnprovable: boolean;
    /** Whether this report's rows may correct a `not_executed` intent (see runOnce, correctLateExecutions). */
    correctionsTrusted: boolean;
    rowsRejected: number;
    /**
     * A run without a report (applyNoReport): why there is none, for the `unresolved` summaries ("no file
     * matches reports/acme-pay/*.csv"), which then never say that a report was read.
     */
    noReport?: string;
    checkpoint: () => void;
  },
): Promise<ApplyOutcome> {
  const { settings, runId, checkpoint } = input;
  const partner = settings.partner;
  const actor = `reconciler:run-${runId}`;
  const common = {
    partner,
    stuckAfterMs: settings.stuckAfterMs,
    coverage: input.coverage,
    lookup: input.lookup,
  };
  await collectCandidates(db, {
    ...common,
    match: settings.match,
    absenceUnprovable: input.absenceUnprovable,
    rowsRejected: input.rowsRejected,
    settlementLagMs: settings.settlementLagMs,
    deadlineMs: settings.deadlineMs,
    clockSkewMs: settings.clockSkewMs,
  });
  const { match } = settings;
  const shapeWarning =
    match.by !== 'amount' && match.shape !== undefined && !input.lookup
      ? await outOfShapeWarning(db, { by: match.by, shape: match.shape })
      : null;
  // Before the evidence is collected: a corrected intent's rows are then its evidence, as a completed one's.
  const corrected = await correctLateExecutions(db, {
    partner,
    clockSkewMs: settings.clockSkewMs,
    settlementLagMs: settings.settlementLagMs,
    resolvedBy: actor,
    trusted: input.correctionsTrusted,
  });
  checkpoint();
  // Evidence from earlier runs is read before this run's records are stored (see collectStoredEvidence).
  const knownRows = await findKnownRecords(db, partner);
  await collectStoredEvidence(db);
  checkpoint();
  await storePartnerRecords(db, { partner, runId, knownRows });
  await collectNewEvidence(db, { runId, knownRows });
  checkpoint();
  const resolved = await resolveStuckIntents(db, {
    partner,
    stuckAfterMs: settings.stuckAfterMs,
    resolvedBy: actor,
    runId,
  });
  checkpoint();
  await flagDiscrepancies(db, {
    ...common,
    source: input.source,
    noReport: input.noReport,
    runId,
    settlementLagMs: settings.settlementLagMs,
    clockSkewMs: settings.clockSkewMs,
  });
  const discrepancies = await raiseFlags(db, { partner, runId, actor });
  return { matched: input.matched, resolved, corrected, discrepancies, shapeWarning };
}
