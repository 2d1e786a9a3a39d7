import type { RejectedRow } from '../reports/partnerRow.js';
import type { RowKind } from '../reports/rowKind.js';
import { DISCREPANCY_KINDS, type DiscrepancyKind } from '../shared/status.js';

/** The report `rejected` list keeps this many rows; `rowsRejected` always counts them all. */
export const MAX_REPORTED_REJECTIONS = 10_000;
/** The run row's `rejected` column keeps this many rows. */
export const MAX_RECORDED_REJECTIONS = 1_000;

/**
 * What one reconciliation run did (or, for a dry run, would do). One per report file; one per API read; one
 * for a file source whose glob matched no file (`noReport`).
 */
export interface ReconciliationResult {
  /** `reconciliation_runs.id`; null only for a skipped scheduled run (another worker has the slot). */
  runId: string | null;
  partner: string;
  /**
   * The file path, or the API address that was read; without a report, what was looked for (`no report (no
   * file matches reports/acme-pay/*.csv)`).
   */
  source: string;
  /**
   * True when the source yielded no report (a glob that matched no file): the run read and proved nothing;
   * it completed the stuck intents whose execution an earlier run stored (`resolved.completed`, with the
   * duplicates and mismatches those records show) and raised `unresolved` for the intents stuck past the
   * partner's deadline with none (`discrepancies.unresolved` counts the new ones; `warnings` says so in words).
   */
  noReport: boolean;
  /** sha256 (hex) of the file's bytes, or of the canonical rows of an API read; null when not read. */
  checksum: string | null;
  /**
   * `abandoned`: another process closed this run's row because its heartbeat had stopped (a pause or a lost
   * database connection longer than `abandonAfterMs`); the run rolled back, nothing was applied.
   */
  status: 'succeeded' | 'failed' | 'dry_run' | 'skipped' | 'abandoned';
  /** Records read, accepted and rejected. */
  rowsRead: number;
  rowsRejected: number;
  /** The rejected records (the first {@link MAX_REPORTED_REJECTIONS}), with the line where each starts. */
  rejected: RejectedRow[];
  /**
   * Accepted rows by what they say happened: executions (the only rows matched), reversals, failed tries,
   * ignored rows (fees, payouts). A failed run counts none.
   */
  rowsByKind: Record<RowKind, number>;
  /** Accepted rows paired with one of our intents. */
  matched: number;
  /** Accepted rows that could be the execution of more than one intent: given to none, each an `ambiguous_match`. */
  ambiguous: number;
  /** Stuck intents this run settled. */
  resolved: { completed: number; notExecuted: number };
  /**
   * Intents settled `not_executed` (by an earlier run's proof, or by their caller) whose execution this
   * report shows, for the attempt still current: corrected to `completed` so the next delivery replays
   * instead of charging again, each with a `late_completion` discrepancy (counted in `discrepancies` when
   * new). Not counted in `resolved`, which is about stuck intents.
   */
  corrected: number;
  /** Discrepancies this run raised for the first time, by kind (re-raising a known problem counts 0). */
  discrepancies: Record<DiscrepancyKind, number>;
  /**
   * The period the report declares it is complete for (capped at the run's start); null when it declares
   * none. Absence is proven only inside it, and only when `warnings` says nothing against it.
   */
  coverage: { from: Date; to: Date } | null;
  /**
   * Why this run proves less than it could, in words for the operator: no declared coverage, a report that
   * does not look like this partner's ("0 of 200 rows match: wrong partner or wrong file?"), rejected rows
   * that could be anybody's. Empty when the report was taken at its word.
   */
  warnings: string[];
  /** Why the run failed (`aborted` when stopped by its signal) or was abandoned; null otherwise. */
  error: string | null;
  durationMs: number;
}

/** @deprecated The old name of {@link ReconciliationResult} (a run's result, not the partner's report). */
export type RunReport = ReconciliationResult;

/**
 * A run's new discrepancies by kind, every kind at 0: a run can raise each of them (`late_completion` is
 * mostly the ledger's, and a run's when a report shows the execution of an intent settled `not_executed`,
 * correctLateExecutions.ts).
 */
export function zeroDiscrepancies(): Record<DiscrepancyKind, number> {
  return Object.fromEntries(DISCREPANCY_KINDS.map((kind) => [kind, 0])) as Record<DiscrepancyKind, number>;
}

export function zeroRowsByKind(): Record<RowKind, number> {
  return { execution: 0, reversal: 0, failed: 0, ignored: 0 };
}

/** A report with nothing done yet; the run fills it in. */
export function emptyResult(partner: string, source: string): ReconciliationResult {
  return {
    runId: null,
    partner,
    source,
    noReport: false,
    checksum: null,
    status: 'failed',
    rowsRead: 0,
    rowsRejected: 0,
    rejected: [],
    rowsByKind: zeroRowsByKind(),
    matched: 0,
    ambiguous: 0,
    resolved: { completed: 0, notExecuted: 0 },
    corrected: 0,
    discrepancies: zeroDiscrepancies(),
    coverage: null,
    warnings: [],
    error: null,
    durationMs: 0,
  };
}
