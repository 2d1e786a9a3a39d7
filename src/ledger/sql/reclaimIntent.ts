import type { PreparedQueryable } from '../../database/queryable.js';
import { type FoundIntentRow, leaseRunning } from './leaseRunning.js';
import { preparedStatement } from './preparedStatement.js';

/** Either a new attempt of an existing intent, or the intent as it stands (nothing claimed). */
export type ReclaimOutcome =
  | { claimed: true; id: string; attempt: number; lease_expires_at: Date }
  | { claimed: false; intent: FoundIntentRow | undefined };

const RECLAIM = preparedStatement(
  'intent_ledger_reclaim',
  `WITH previous AS (
       SELECT i.id, i.attempt, i.owner, i.attempt_started_at, i.lease_expires_at
         FROM intents i
        WHERE i.partner = $1 AND i.key = $2 AND i.fingerprint = $3
          AND (i.status = 'not_executed'
               OR (i.partner_honours_key AND $6
                   AND (i.status = 'unknown' OR (i.status = 'in_progress' AND i.lease_expires_at <= now()))))
          FOR UPDATE
     ), reclaimed AS (
       UPDATE intents i
          SET status = 'in_progress', attempt = i.attempt + 1, attempt_started_at = now(),
              lease_expires_at = now() + $4 * interval '1 millisecond', owner = $5, settled_at = NULL,
              reason = NULL, resolved_by = NULL, updated_at = now()
         FROM previous p
        WHERE i.id = p.id
        RETURNING i.*
     ), left_behind AS (
       INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at)
       SELECT p.id, p.attempt, p.owner, p.attempt_started_at, coalesce(p.lease_expires_at, p.attempt_started_at)
         FROM previous p
        WHERE EXISTS (SELECT 1 FROM reclaimed)
       ON CONFLICT (intent_id, attempt) DO NOTHING
     )
     SELECT r.*, true AS claimed, true AS lease_running FROM reclaimed r
     UNION ALL
     SELECT i.*, false AS claimed, ${leaseRunning('i')} AS lease_running
       FROM intents i
      WHERE i.partner = $1 AND i.key = $2 AND NOT EXISTS (SELECT 1 FROM reclaimed)`,
);

/**
 * For an intent that already exists: claims attempt + 1 when that is allowed, otherwise reads the intent, in
 * ONE statement. A claim over an existing intent is allowed only from `not_executed` (invariant 2), or, for a
 * partner that honours our key (stored and asked), also from `unknown` or an `in_progress` whose lease ended
 * (the partner deduplicates). A different fingerprint never claims: the caller reports a key conflict.
 *
 * The row lock is the atomic part: concurrent re-claims serialise on `previous`'s FOR UPDATE and PostgreSQL
 * re-checks its WHERE against the committed row, so exactly one wins, and `previous` holds the attempt it
 * replaces as committed (an UPDATE's RETURNING shows only the new values). That attempt keeps a row: one
 * that ended (not executed, unknown) has it already; one whose lease ran out gets it here, without an
 * outcome (migration 0006); the coalesce is for an intent a previous version settled, which cleared its
 * lease (the row it left is there already, but NOT NULL is checked before the conflict). A loser's read half may still show the row as it was before the winner's commit
 * (same snapshot); the caller then simply asks again.
 */
export async function reclaimIntent(
  db: PreparedQueryable,
  input: {
    partner: string;
    key: string;
    fingerprint: string;
    leaseMs: number;
    owner: string;
    partnerHonoursKey: boolean;
  },
): Promise<ReclaimOutcome> {
  const result = await db.query<FoundIntentRow & { claimed: boolean }>(
    RECLAIM([
      input.partner,
      input.key,
      input.fingerprint,
      input.leaseMs,
      input.owner,
      input.partnerHonoursKey,
    ]),
  );
  const row = result.rows[0];
  if (row?.claimed)
    return {
      claimed: true,
      id: row.id,
      attempt: row.attempt,
      lease_expires_at: row.lease_expires_at as Date,
    };
  if (!row) return { claimed: false, intent: undefined };
  const { claimed: _claimed, ...intent } = row;
  return { claimed: false, intent };
}
