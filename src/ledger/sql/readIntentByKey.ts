import type { PreparedQueryable } from '../../database/queryable.js';
import type { ExistingIntentRow } from './claimIntent.js';
import { preparedStatement } from './preparedStatement.js';

/**
 * What a plain read of the key returns: all that answering a delivery from the row alone needs (a replay of a
 * completed intent, the refusal of a rejected one, a conflict with another payload). The lease and whether
 * the partner honours the key are left out: only an `in_progress`, `unknown` or `not_executed` row needs
 * them, and such a row goes on to the claim's statement, which reads them itself.
 */
export type KeyedIntentRow = Pick<
  ExistingIntentRow,
  'id' | 'attempt' | 'status' | 'fingerprint' | 'partner_reference' | 'response' | 'reason'
>;

const READ_BY_KEY = preparedStatement(
  'intent_ledger_read_key',
  `SELECT i.id, i.attempt, i.status, i.fingerprint, i.partner_reference, i.response, i.reason
     FROM intents i
    WHERE i.partner = $1 AND i.key = $2`,
  'array',
);

/** The statement's row as pg hands it over in array mode: the columns in the order the SELECT lists them. */
type KeyedIntentColumns = [
  KeyedIntentRow['id'],
  KeyedIntentRow['attempt'],
  KeyedIntentRow['status'],
  KeyedIntentRow['fingerprint'],
  KeyedIntentRow['partner_reference'],
  KeyedIntentRow['response'],
  KeyedIntentRow['reason'],
];

/**
 * The intent under (partner, key) as a plain read sees it, or `undefined`. The ledger sends it before the
 * claim only while most of its recent claims were answered by the key's row alone (claimOrder.ts): such a
 * duplicate is then one prepared SELECT, which locks nothing but the table and the one index it reads, where
 * the claim's statement opens and locks every index of `intents` for its insert even when the insert finds
 * the key taken. Its columns are only those of {@link KeyedIntentRow}: on a replay the client's own work per
 * column decoded (a timestamptz parsed into a Date, say) is a visible share of the call (docs/PERFORMANCE.md,
 * "Replay").
 *
 * The caller trusts what it returns only for what cannot change (another fingerprint, a final status).
 * Anything else, and a key it does not find (a contender's insert may be in flight, invisible to this
 * snapshot), goes on to the claim's statements, which decide.
 */
export async function readIntentByKey(
  db: PreparedQueryable,
  partner: string,
  key: string,
): Promise<KeyedIntentRow | undefined> {
  const result = await db.query<KeyedIntentColumns>(READ_BY_KEY([partner, key]));
  const row = result.rows[0];
  if (row === undefined) return undefined;
  return {
    id: row[0],
    attempt: row[1],
    status: row[2],
    fingerprint: row[3],
    partner_reference: row[4],
    response: row[5],
    reason: row[6],
  };
}
