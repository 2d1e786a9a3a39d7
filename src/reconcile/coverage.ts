import { basename } from 'node:path';
import { DateTime } from 'luxon';
import type { Queryable } from '../database/queryable.js';
import type { ReportedPeriod } from './reportedCoverage.js';
import type { DeclaredCoverage, RunSettings } from './runSettings.js';

export interface Coverage {
  from: Date;
  to: Date;
}

/** The period a run may prove absence over, or why it may not. */
export interface CoverageDecision {
  coverage: Coverage | null;
  /** Why there is none, for the run's warnings; null when there is one. */
  warning: string | null;
}

const DAY_MS = 86_400_000;

/**
 * The window an API listing is asked for when the reconciler declares none: far enough back to see every
 * execution of an intent that could still be stuck (deadline + settlement lag + stuckAfter), up to now, and
 * a clock skew further, since an intent's absence is proven only for starts a skew inside the window (the
 * partner dates in its clock: collectCandidates). Computed by PostgreSQL, like every time the engine compares.
 */
async function defaultApiWindow(db: Queryable, settings: RunSettings): Promise<Coverage> {
  const backMs =
    settings.deadlineMs + settings.settlementLagMs + settings.stuckAfterMs + settings.clockSkewMs;
  const result = await db.query<Coverage>(
    `SELECT now() - $1 * interval '1 millisecond' AS "from", now() AS "to"`,
    [backMs],
  );
  return result.rows[0];
}

/** The window an API listing is asked for: the declared fixed period, else {@link defaultApiWindow}. */
export async function apiWindow(db: Queryable, settings: RunSettings): Promise<Coverage> {
  if (settings.coverage?.type !== 'fixed') return defaultApiWindow(db, settings);
  const result = await db.query<Coverage>('SELECT $1::timestamptz AS "from", $2::timestamptz AS "to"', [
    settings.coverage.from,
    settings.coverage.to,
  ]);
  return result.rows[0];
}

/**
 * What the report declares it is complete for (invariant 9: absence needs proof): the reconciler's fixed
 * period, the date in the file's name, the window an API listing was asked for, or (`{ fromReport: true }`)
 * what the report's own contents declared (`reported`, known only once it has been read); never the times
 * of the report's rows. Capped at the run's start (the transaction's `now()`): nobody can have reported
 * what had not happened yet when the run began.
 */
export async function declaredCoverage(
  db: Queryable,
  input: { settings: RunSettings; file?: string; window?: Coverage; reported?: ReportedPeriod },
): Promise<CoverageDecision> {
  const { settings } = input;
  if (input.window) return { coverage: await capAtRunStart(db, input.window), warning: null };
  const declaration = settings.coverage;
  if (!declaration) {
    return {
      coverage: null,
      warning:
        'the reconciler declares no coverage for its reports (coverage: { fromFileName } or { from, to }): ' +
        'intents found in the report are completed, but none is proven absent',
    };
  }
  if (declaration.type === 'fixed') return { coverage: await capAtRunStart(db, declaration), warning: null };
  if (declaration.type === 'report') return reportedCoverage(db, input.reported, input.file);
  const period =
    input.file === undefined ? undefined : periodInFileName(input.file, declaration, settings.timezone);
  if (!period) {
    return {
      coverage: null,
      warning: `the file name ${JSON.stringify(basename(input.file ?? ''))} does not carry a date matching ${declaration.pattern} (${declaration.dateFormat}): no intent is proven absent`,
    };
  }
  const capped = await capAtRunStart(db, period);
  return capped
    ? { coverage: capped, warning: null }
    : {
        coverage: null,
        warning: 'the file declares a period that starts after this run began: no intent is proven absent',
      };
}

/**
 * `{ fromReport: true }`: the period the report's own declarations share. A report that was to declare one
 * and did not (a section header left out, a file cut before it) proves nothing absent: a warning, never a
 * period guessed from its rows.
 */
async function reportedCoverage(
  db: Queryable,
  reported: ReportedPeriod | undefined,
  file: string | undefined,
): Promise<CoverageDecision> {
  const name = file === undefined ? 'the report' : JSON.stringify(basename(file));
  if (!reported) {
    return {
      coverage: null,
      warning: `the reconciler takes the coverage from the report (coverage: { fromReport: true }), but ${name} declares none: no intent is proven absent`,
    };
  }
  if (reported.unclosed) {
    return { coverage: null, warning: `${name}: ${reported.unclosed}: no intent is proven absent` };
  }
  if (reported.from > reported.to) {
    return {
      coverage: null,
      warning: `the ${reported.declarations} coverage declarations of ${name} share no period: no intent is proven absent`,
    };
  }
  const capped = await capAtRunStart(db, reported);
  return capped
    ? { coverage: capped, warning: null }
    : {
        coverage: null,
        warning: `${name} declares a period that starts after this run began: no intent is proven absent`,
      };
}

/**
 * The period `2026-11-28.csv` declares: that date's midnight in the reconciler's zone, for `periodMs`. Whole
 * days are calendar days in that zone (a day with a daylight-saving change is 23 or 25 hours long).
 */
function periodInFileName(
  file: string,
  declaration: Extract<DeclaredCoverage, { type: 'fileName' }>,
  timezone: string,
): Coverage | undefined {
  const match = declaration.pattern.exec(basename(file));
  const text = match?.groups?.date ?? match?.[1];
  if (!text) return undefined;
  const start = DateTime.fromFormat(text, declaration.dateFormat, { zone: timezone });
  if (!start.isValid) return undefined;
  // Whole days end at the same wall-clock time (midnight) that many dates later, computed on the wall clock
  // written in the name, not on `start`: where midnight does not exist (Chile in September, São Paulo
  // before 2019) luxon moves the day's start to 01:00, and `start + 1 day` would then end at 01:00 the
  // next day, claiming the first hour of the next day's file for this one (and proving absent what is in it).
  const written = DateTime.fromFormat(text, declaration.dateFormat, { zone: 'UTC' });
  const end =
    declaration.periodMs % DAY_MS === 0
      ? DateTime.fromObject(written.plus({ days: declaration.periodMs / DAY_MS }).toObject(), {
          zone: timezone,
        })
      : start.plus({ milliseconds: declaration.periodMs });
  return { from: start.toJSDate(), to: end.toJSDate() };
}

/** The period as instants, ending no later than the run's start; null when nothing of it is left. */
async function capAtRunStart(
  db: Queryable,
  period: { from: string | Date; to: string | Date },
): Promise<Coverage | null> {
  const result = await db.query<Coverage>(
    `SELECT $1::timestamptz AS "from", LEAST($2::timestamptz, now()) AS "to"
      WHERE $1::timestamptz <= LEAST($2::timestamptz, now())`,
    [period.from, period.to],
  );
  return result.rows[0] ?? null;
}
