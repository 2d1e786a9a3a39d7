import type { PreparedQueryable } from '../../database/queryable.js';
import type { ExistingIntentRow } from './claimIntent.js';
import { leaseRunning } from './leaseRunning.js';
import { preparedStatement } from './preparedStatement.js';

const READ_BY_KEY = preparedStatement(
  'intent_ledger_read_key',
  `SELECT i.id, i.attempt, i.lease_expires_at, i.status, i.fingerprint, i.partner_honours_key,
          i.partner_reference, i.response, i.reason, ${leaseRunning('i')} AS lease_running
     FROM intents i
    WHERE i.partner = $1 AND i.key = $2`,
);

/**
 * The intent under (partner, key) as a plain read sees it, or `undefined`: what the claim reads of an existing
 * intent ({@link ExistingIntentRow}), without the insert. The ledger sends it before the claim only while
 * most of its recent claims were answered by the key's row alone (claimOrder.ts): such a duplicate is then
 * one prepared SELECT, which locks nothing but the table and the one index it reads, where the claim's
 * statement opens and locks every index of `intents` for its insert even when the insert finds the key taken.
 *
 * The caller trusts what it returns exactly as it trusts the claim's own read: only for what cannot change
 * (another fingerprint, a final status). Anything else, and a key it does not find (a contender's insert may
 * be in flight, invisible to this snapshot), goes on to the claim's statements, which decide.
 */
export async function readIntentByKey(
  db: PreparedQueryable,
  partner: string,
  key: string,
): Promise<ExistingIntentRow | undefined> {
  const result = await db.query<ExistingIntentRow>(READ_BY_KEY([partner, key]));
  return result.rows[0];
}
