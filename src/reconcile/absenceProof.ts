import type { Queryable } from '../database/queryable.js';
import type { Coverage } from './coverage.js';
import { judgePlausibility } from './judgePlausibility.js';
import type { RunSettings } from './runSettings.js';
import type { StageResult } from './stageReport.js';

/** Whether this run may prove any intent absent, and if not, why (for the run's warnings). */
export interface AbsenceProof {
  /** False: every stuck intent's absence stays unproven in this run, whatever the report lacks. */
  possible: boolean;
  warning: string | null;
  /** The report does not look like this partner's (judgePlausibility): its rows may be anybody's. */
  implausible?: boolean;
}

/**
 * Stage 7 (docs/DESIGN.md): the run-wide reasons a report may prove nothing absent, once it is staged and
 * matched. Without a declared coverage there is nothing to decide. A file that may be cut short (its last
 * record without the line break its source ends files with) rules it out. Rejected rows that could be anybody's
 * (too broken to name an intent, or any rejection under amount matching) rule it out; so does a report that
 * does not look like this partner's (see judgePlausibility). Per-intent reasons (a rejected or ambiguous
 * row naming it, a near miss) are collectCandidates' business.
 */
export async function decideAbsenceProof(
  db: Queryable,
  input: {
    settings: RunSettings;
    coverage: Coverage | null;
    staged: StageResult;
    rowsMatching: number;
  },
): Promise<AbsenceProof> {
  const { settings, staged } = input;
  if (!input.coverage) return { possible: false, warning: null };
  // An intent is proven absent only if its start lies clockSkew inside the period and lag + clockSkew before
  // its end (collectCandidates): a period shorter than that holds no such start, and silently proving
  // nothing would leave whoever declared it wondering why nothing is ever settled not executed.
  const spanMs = input.coverage.to.getTime() - input.coverage.from.getTime();
  const neededMs = 2 * settings.clockSkewMs + settings.settlementLagMs;
  if (spanMs < neededMs) {
    return {
      possible: false,
      warning:
        `the report covers ${formatSpan(spanMs)}, less than twice clockSkew plus settlementLag ` +
        `(${formatSpan(neededMs)}): no intent's start can lie far enough inside it, and this run proves no intent absent`,
    };
  }
  if (staged.unterminatedLine !== undefined) {
    return {
      possible: false,
      warning: `the file ends without a line break (its last record starts on line ${staged.unterminatedLine}): it may be cut short, and this run proves no intent absent`,
    };
  }
  if (staged.rowsUnidentified > 0) {
    return {
      possible: false,
      warning: `${staged.rowsUnidentified} rejected rows could not be read far enough to say whose they are: this run proves no intent absent`,
    };
  }
  if (settings.match.by === 'amount' && staged.rowsRejected > 0) {
    return {
      possible: false,
      warning: `${staged.rowsRejected} rejected rows could be the execution of any intent matched by amount: this run proves no intent absent`,
    };
  }
  const implausible = await judgePlausibility(db, {
    partner: settings.partner,
    coverage: input.coverage,
    rows: staged.extent.rows,
    rowsMatching: input.rowsMatching,
    minMatchedShare: settings.minMatchedShare,
    stuckAfterMs: settings.stuckAfterMs,
  });
  return implausible
    ? { possible: false, warning: implausible, implausible: true }
    : { possible: true, warning: null };
}

/** A span for a warning: whole seconds, minutes or hours as the span allows. */
function formatSpan(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 360) / 10} h`;
}
