import type { IntentRow } from './intentRow.js';
import type { Queryable } from './queryable.js';

export interface FoundIntentRow extends IntentRow {
  /**
   * An attempt in progress whose lease has not ended. Evaluated by PostgreSQL against its own clock, so
   * worker clocks never decide a lease. (A settled intent keeps its last attempt's lease_expires_at.)
   */
  lease_running: boolean;
}

/** The intent recorded for (partner, key), if any. */
export async function findIntent(
  db: Queryable,
  partner: string,
  key: string,
): Promise<FoundIntentRow | undefined> {
  const result = await db.query<FoundIntentRow>(
    `SELECT i.*, coalesce(i.status = 'in_progress' AND i.lease_expires_at > now(), false) AS lease_running
       FROM intents i WHERE i.partner = $1 AND i.key = $2`,
    [partner, key],
  );
  return result.rows[0];
}
