import type { Queryable } from './queryable.js';

export interface ClaimInput {
  partner: string;
  operation: string;
  key: string;
  fingerprint: string;
  reference: string | null;
  amount: string | null;
  currency: string | null;
  leaseMs: number;
  owner: string;
  partnerHonoursKey: boolean;
}

export interface ClaimedRow {
  id: string;
  attempt: number;
  lease_expires_at: Date;
}

/**
 * Claims (partner, key) for a new attempt in ONE statement, or returns nothing when the intent exists and
 * may not be claimed now.
 *
 * Why one conditional upsert and not "select, then insert": two consumers handed the same redelivered
 * message would both see "nothing there" and both call the partner. With `ON CONFLICT DO UPDATE ... WHERE`,
 * PostgreSQL serialises the contenders on the unique index: exactly one inserts (attempt 1) or bumps the
 * attempt; the others wait for its commit, re-check the WHERE against the committed row and get no row.
 * No explicit locks, no advisory locks, one round trip. The attempt row is written by the same statement,
 * so a claim can never exist without its attempt.
 *
 * A claim over an existing intent is allowed only from `not_executed` (invariant 2), or, for a partner that
 * honours our key, also from `unknown` or an `in_progress` whose lease ended (the partner deduplicates).
 * A different fingerprint never claims: the caller reports a key conflict.
 */
export async function claimIntent(db: Queryable, input: ClaimInput): Promise<ClaimedRow | undefined> {
  const result = await db.query<ClaimedRow>(
    `WITH claimed AS (
       INSERT INTO intents AS i (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                                 lease_expires_at, owner, partner_honours_key)
       VALUES ($1, $2, $3, $4, $5, $6::numeric, $7, 'in_progress', 1, now() + $8 * interval '1 millisecond', $9, $10)
       ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO UPDATE
         SET status = 'in_progress', attempt = i.attempt + 1, lease_expires_at = EXCLUDED.lease_expires_at,
             owner = EXCLUDED.owner, partner_honours_key = EXCLUDED.partner_honours_key,
             settled_at = NULL, reason = NULL, resolved_by = NULL, updated_at = now()
       WHERE i.fingerprint = EXCLUDED.fingerprint
         AND (i.status = 'not_executed'
              OR (i.partner_honours_key AND EXCLUDED.partner_honours_key
                  AND (i.status = 'unknown' OR (i.status = 'in_progress' AND i.lease_expires_at <= now()))))
       RETURNING i.id, i.attempt, i.lease_expires_at
     ), attempt AS (
       INSERT INTO intent_attempts (intent_id, attempt, owner, lease_expires_at)
       SELECT id, attempt, $9, lease_expires_at FROM claimed
     )
     SELECT id, attempt, lease_expires_at FROM claimed`,
    [
      input.partner,
      input.operation,
      input.key,
      input.fingerprint,
      input.reference,
      input.amount,
      input.currency,
      input.leaseMs,
      input.owner,
      input.partnerHonoursKey,
    ],
  );
  return result.rows[0];
}
