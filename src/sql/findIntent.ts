import type { IntentRow } from './intentRow.js';
import type { Queryable } from './queryable.js';

export interface FoundIntentRow extends IntentRow {
  /**
   * An attempt in progress whose lease has not ended. Evaluated by PostgreSQL against its own clock, so
   * worker clocks never decide a lease. (A settled intent keeps its last attempt's lease_expires_at.)
   */
  lease_running: boolean;
}

/** SQL: intent `alias` has an attempt in progress whose lease has not ended (see `lease_running`). */
export function leaseRunning(alias: string): string {
  return `coalesce(${alias}.status = 'in_progress' AND ${alias}.lease_expires_at > now(), false)`;
}

/** The intent recorded for (partner, key), if any. */
export async function findIntent(
  db: Queryable,
  partner: string,
  key: string,
): Promise<FoundIntentRow | undefined> {
  const result = await db.query<FoundIntentRow>(
    `SELECT i.*, ${leaseRunning('i')} AS lease_running
       FROM intents i WHERE i.partner = $1 AND i.key = $2`,
    [partner, key],
  );
  return result.rows[0];
}
