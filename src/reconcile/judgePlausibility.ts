import type { Queryable } from '../database/queryable.js';
import type { Coverage } from './coverage.js';
import { stuckCondition } from './stuckCondition.js';

/**
 * Whether the report looks like this partner's for its period. Another partner's file with the same columns,
 * or the wrong day's, reads cleanly and matches nothing: taken at its word, it would prove every stuck intent
 * of the period absent, and each would be charged again. So when none of its rows match (or could match) an
 * intent of this partner, or fewer than `minMatchedShare` of them, while the ledger holds intents in the
 * covered period, the report proves nothing absent. Returns the warning that says so, or null when the report is plausible.
 *
 * "Holds intents in the period": a stuck one (the unsettled index) or a completed one settled since the
 * period began (the settled_at index; settled_at is never before the attempt's start), whose attempt started
 * inside it.
 */
export async function judgePlausibility(
  db: Queryable,
  input: {
    partner: string;
    coverage: Coverage;
    rows: number;
    rowsMatching: number;
    minMatchedShare: number;
    stuckAfterMs: number;
  },
): Promise<string | null> {
  const { rows, rowsMatching } = input;
  if (rows === 0 || (rowsMatching > 0 && rowsMatching / rows >= input.minMatchedShare)) return null;
  const held = await db.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM intents i
                     WHERE i.partner = $1 AND ${stuckCondition('i', '$4')}
                       AND i.attempt_started_at BETWEEN $2 AND $3)
         OR EXISTS (SELECT 1 FROM intents i
                     WHERE i.settled_at >= $2 AND i.partner = $1 AND i.status = 'completed'
                       AND i.attempt_started_at BETWEEN $2 AND $3) AS held`,
    [input.partner, input.coverage.from, input.coverage.to, input.stuckAfterMs],
  );
  if (!held.rows[0].held) return null;
  const share = rowsMatching === 0 ? '' : ` (less than minMatchedShare, ${input.minMatchedShare * 100}%)`;
  return (
    `${rowsMatching} of ${rows} rows match an intent of this partner${share}, ` +
    'while the ledger holds intents in the period the report covers: wrong partner or wrong file? ' +
    'No intent is proven absent'
  );
}
