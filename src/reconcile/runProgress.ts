import type { ReconciliationResult } from './reconciliationResult.js';

/**
 * Where one run is, for progress displays (the CLI's bar). A run goes `reading` (zero or more times, rows
 * read so far increasing) -> `deciding` (the report is staged; the set-based SQL that decides and applies
 * everything runs now, for tens of seconds on a large report (docs/PERFORMANCE.md, "The command line"),
 * and reports nothing until it ends) -> `done`. A
 * run that fails while reading (a broken file, too many rejected rows, an abort) goes straight to `done`. A
 * scheduled run that lost its slot reports nothing.
 */
export type RunProgress =
  | { phase: 'reading' | 'deciding'; runId: string; source: string; rowsRead: number }
  | {
      phase: 'done';
      runId: string;
      source: string;
      rowsRead: number;
      status: ReconciliationResult['status'];
    };

/** Receives {@link RunProgress}; called on the run's own path, so it should return quickly. */
export type RunProgressListener = (progress: RunProgress) => void;

/** Tells `listener`, if any; a listener that throws is ignored: progress reporting never breaks a run. */
export function reportProgress(listener: RunProgressListener | undefined, progress: RunProgress): void {
  if (!listener) return;
  try {
    listener(progress);
  } catch {
    // a display problem is not the run's problem
  }
}
