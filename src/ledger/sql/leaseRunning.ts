import type { IntentRow } from './intentRow.js';

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
