import type { PreparedQueryable } from '../../database/queryable.js';
import { preparedStatement } from './preparedStatement.js';

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

const CLAIM_NEW = preparedStatement(
  'intent_ledger_claim_new',
  `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                        lease_expires_at, owner, partner_honours_key)
   VALUES ($1, $2, $3, $4, $5, $6::numeric, $7, 'in_progress', 1, now() + $8 * interval '1 millisecond', $9, $10)
   ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO NOTHING
   RETURNING id, attempt, lease_expires_at`,
);

/**
 * Claims attempt 1 of a new (partner, key) in ONE statement, or returns nothing when the intent exists.
 *
 * Why a conditional insert and not "select, then insert": two consumers handed the same redelivered message
 * would both see "nothing there" and both call the partner. With `ON CONFLICT DO NOTHING`, PostgreSQL
 * serialises the contenders on the unique index: exactly one inserts; the others wait for its commit and get
 * no row. The intent row describes the attempt it claims (attempt, owner, attempt_started_at, lease): no
 * attempt row is written until the attempt ends other than by completing (migration 0006).
 *
 * Why DO NOTHING and a separate re-claim ({@link reclaimIntent}) rather than one `ON CONFLICT DO UPDATE ...
 * WHERE <claimable>`: DO UPDATE locks the existing row even when its WHERE is false, so every duplicate
 * delivery (the common case this product exists for) became a write transaction with a WAL flush; with
 * this split a replay takes no lock and writes almost no WAL, and its throughput more than doubled. Prepared
 * (named) statements: PostgreSQL plans them once per connection instead of on every call, and parsing and
 * planning were half of the server CPU per call. Figures: docs/PERFORMANCE.md, "The ledger's hot path".
 */
export async function claimNewIntent(
  db: PreparedQueryable,
  input: ClaimInput,
): Promise<ClaimedRow | undefined> {
  const result = await db.query<ClaimedRow>(
    CLAIM_NEW([
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
    ]),
  );
  return result.rows[0];
}
