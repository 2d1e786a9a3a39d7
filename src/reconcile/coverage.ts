import type { Queryable } from '../database/queryable.js';
import type { RunSettings } from './runSettings.js';

export interface Coverage {
  from: Date;
  to: Date;
}

/**
 * The window an API listing is asked for when the reconciler does not set `coverage`: far enough back to
 * see every execution of an intent that could still be stuck (deadline + settlement lag + stuckAfter),
 * up to now. Computed by PostgreSQL, like every time the engine compares.
 */
export async function defaultApiWindow(db: Queryable, settings: RunSettings): Promise<Coverage> {
  const backMs = settings.deadlineMs + settings.settlementLagMs + settings.stuckAfterMs;
  const result = await db.query<Coverage>(
    `SELECT now() - $1 * interval '1 millisecond' AS "from", now() AS "to"`,
    [backMs],
  );
  return result.rows[0];
}

/** The configured coverage, as instants. */
export async function configuredCoverage(
  db: Queryable,
  coverage: { from: string; to: string },
): Promise<Coverage> {
  const result = await db.query<Coverage>('SELECT $1::timestamptz AS "from", $2::timestamptz AS "to"', [
    coverage.from,
    coverage.to,
  ]);
  return result.rows[0];
}
