import type { PreparedQueryable } from '../../database/queryable.js';
import type { FoundIntentRow } from './leaseRunning.js';
import { leaseRunning } from './leaseRunning.js';
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

interface ClaimedRow {
  id: string;
  attempt: number;
  lease_expires_at: Date;
}

/** What the claim's statement reads of an intent that already exists: all a replay or a refusal needs. */
export type ExistingIntentRow = Pick<
  FoundIntentRow,
  | 'id'
  | 'attempt'
  | 'lease_expires_at'
  | 'status'
  | 'fingerprint'
  | 'partner_honours_key'
  | 'partner_reference'
  | 'response'
  | 'reason'
  | 'lease_running'
>;

/** Attempt 1 claimed, or the intent as the statement found it (none: a contender's insert it cannot see yet). */
export type FirstClaimOutcome =
  | { claimed: true; row: ClaimedRow }
  | { claimed: false; existing: ExistingIntentRow | undefined };

const CLAIM_OR_READ = preparedStatement(
  'intent_ledger_claim_new',
  `WITH claimed AS (
       INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                            lease_expires_at, owner, partner_honours_key)
       VALUES ($1, $2, $3, $4, $5, $6::numeric, $7, 'in_progress', 1, now() + $8::float8 * interval '1 millisecond',
               $9, $10)
       ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO NOTHING
       RETURNING id, attempt, lease_expires_at
     )
   SELECT true AS claimed, c.id, c.attempt, c.lease_expires_at, NULL::text AS status, NULL::text AS fingerprint,
          NULL::boolean AS partner_honours_key, NULL::text AS partner_reference, NULL::jsonb AS response,
          NULL::jsonb AS reason, true AS lease_running
     FROM claimed c
   UNION ALL
   SELECT false, i.id, i.attempt, i.lease_expires_at, i.status, i.fingerprint, i.partner_honours_key,
          i.partner_reference, i.response, i.reason, ${leaseRunning('i')}
     FROM intents i
    WHERE i.partner = $1 AND i.key = $3 AND NOT EXISTS (SELECT 1 FROM claimed)`,
);

/**
 * Claims attempt 1 of a new (partner, key) in ONE statement, or reads the intent when it exists, in the
 * same round trip.
 *
 * Why a conditional insert and not "select, then insert": two consumers handed the same redelivered message
 * would both see "nothing there" and both call the partner. With `ON CONFLICT DO NOTHING`, PostgreSQL
 * serialises the contenders on the unique index: exactly one inserts; the others wait for its commit and get
 * no row. The intent row describes the attempt it claims (attempt, owner, attempt_started_at, lease): no
 * attempt row is written until the attempt ends other than by completing (migration 0006).
 *
 * Why the read in the same statement: a duplicate delivery of a settled key (the common case this product
 * exists for) is then one prepared round trip: the insert finds the key taken (no row lock; it only uses up an
 * identity value) and the read,
 * which runs only then, returns the row. Insert first, read on a conflict, rather than read first in this
 * statement: in the benchmark, a read-first form of it cost new keys more server time than it saved a
 * replay (docs/PERFORMANCE.md, "Replay"). A ledger whose recent claims are mostly duplicates sends a plain
 * read before this statement instead (readIntentByKey.ts, claimOrder.ts). The read sees the statement's snapshot, so a contender's insert that committed
 * while ours waited on it at the unique index is invisible to it: the statement then returns no row at all,
 * and the caller reads again with {@link reclaimIntent} (a new statement, a new snapshot). For the same
 * reason the caller trusts the row it does return only for what cannot change (another fingerprint, a final
 * status): the insert may have waited on a transaction that settled it (test/ledger/claimWaits.test.ts).
 *
 * Why DO NOTHING and a separate re-claim ({@link reclaimIntent}) rather than one `ON CONFLICT DO UPDATE ...
 * WHERE <claimable>`: DO UPDATE locks the existing row even when its WHERE is false, so every duplicate
 * delivery became a write transaction with a WAL flush. Prepared (named) statements: PostgreSQL plans them
 * once per connection instead of on every call, and parsing and planning were half of the server CPU per
 * call. Figures: docs/PERFORMANCE.md, "The ledger's hot path".
 */
export async function claimNewIntent(db: PreparedQueryable, input: ClaimInput): Promise<FirstClaimOutcome> {
  const result = await db.query<ExistingIntentRow & { claimed: boolean }>(
    CLAIM_OR_READ([
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
  const row = result.rows[0];
  if (row === undefined) return { claimed: false, existing: undefined };
  if (row.claimed)
    return {
      claimed: true,
      row: { id: row.id, attempt: row.attempt, lease_expires_at: row.lease_expires_at as Date },
    };
  return { claimed: false, existing: row };
}
