import type { Queryable } from '../src/database/queryable.js';
import { type FoundIntentRow, leaseRunning } from '../src/ledger/sql/leaseRunning.js';

/**
 * The intent recorded for (partner, key), read on its own. The ledger no longer sends it (its re-claim reads
 * the row in the same statement); the benchmarks keep it as the shape of a plain keyed read.
 */
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
