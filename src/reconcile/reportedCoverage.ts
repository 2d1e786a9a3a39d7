import type { ReportedCoverage } from '../reports/partnerRow.js';

/**
 * What the coverage declarations a report made in its own contents say together (ReportItem `declaration`,
 * e.g. one per PayPal section): the period EVERY one of them covers. A file with two sections complete for
 * two different days is complete for neither day as a whole (each section may be another account), so the
 * run may prove absence only where all of them agree; disjoint declarations leave an empty period (`from`
 * after `to`), which proves nothing.
 */
export interface ReportedPeriod {
  from: Date;
  to: Date;
  /** How many declarations the report made. */
  declarations: number;
  /** Why one of them promises nothing (see ReportedCoverage.unclosed); the report then proves nothing absent. */
  unclosed?: string;
}

/** {@link ReportedPeriod} with one more declaration folded in; the first one starts it. */
export function foldDeclaration(
  current: ReportedPeriod | undefined,
  declaration: ReportedCoverage,
): ReportedPeriod {
  const unclosed = current?.unclosed ?? declaration.unclosed;
  if (!current)
    return { from: declaration.from, to: declaration.to, declarations: 1, ...(unclosed ? { unclosed } : {}) };
  return {
    from: new Date(Math.max(declaration.from.getTime(), current.from.getTime())),
    to: new Date(Math.min(declaration.to.getTime(), current.to.getTime())),
    declarations: current.declarations + 1,
    ...(unclosed ? { unclosed } : {}),
  };
}
