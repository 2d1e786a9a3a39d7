import type { Queryable } from '../../database/queryable.js';
import type { Intent } from '../../shared/types.js';
import { type AttemptRow, type IntentRow, toIntent } from './intentRow.js';

/** The intent for (partner, key) with every attempt, oldest first; `null` when there is none. */
export async function getIntentWithAttempts(
  db: Queryable,
  partner: string,
  key: string,
): Promise<Intent | null> {
  const intent = await db.query<IntentRow>('SELECT * FROM intents WHERE partner = $1 AND key = $2', [
    partner,
    key,
  ]);
  const row = intent.rows[0];
  if (!row) return null;
  const attempts = await db.query<AttemptRow>(
    'SELECT * FROM intent_attempt_history WHERE intent_id = $1 ORDER BY attempt',
    [row.id],
  );
  return toIntent(row, attempts.rows);
}

/** Same, by intent id. */
export async function getIntentById(db: Queryable, intentId: string): Promise<Intent | null> {
  const intent = await db.query<IntentRow>('SELECT * FROM intents WHERE id = $1', [intentId]);
  const row = intent.rows[0];
  if (!row) return null;
  const attempts = await db.query<AttemptRow>(
    'SELECT * FROM intent_attempt_history WHERE intent_id = $1 ORDER BY attempt',
    [row.id],
  );
  return toIntent(row, attempts.rows);
}
