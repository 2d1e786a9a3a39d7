import type { IntentStatus } from '../../shared/status.js';
import type { Attempt, Intent, Json } from '../../shared/types.js';

/** `intents` as PostgreSQL returns it (numeric and bigint arrive as strings, which is what we want for money). */
export interface IntentRow {
  id: string;
  partner: string;
  operation: string;
  key: string;
  fingerprint: string;
  reference: string | null;
  amount: string | null;
  currency: string | null;
  status: IntentStatus;
  attempt: number;
  /** The current attempt's lease; kept once the intent is settled (migration 0006). */
  lease_expires_at: Date | null;
  owner: string | null;
  /** When the current attempt was claimed. */
  attempt_started_at: Date;
  partner_honours_key: boolean;
  partner_reference: string | null;
  response: Json | null;
  reason: Intent['reason'];
  resolved_by: string | null;
  created_at: Date;
  updated_at: Date;
  settled_at: Date | null;
}

/** A row of the `intent_attempt_history` view (migration 0006): a stored attempt, or the intent's current one. */
export interface AttemptRow {
  intent_id: string;
  attempt: number;
  owner: string | null;
  started_at: Date;
  lease_expires_at: Date;
  ended_at: Date | null;
  outcome: Attempt['outcome'];
  partner_reference: string | null;
  response: Json | null;
  error: Json | null;
  resolution: Attempt['resolution'];
  resolved_by: string | null;
  resolved_at: Date | null;
}

export function toIntent(row: IntentRow, attempts: AttemptRow[]): Intent {
  return {
    id: row.id,
    partner: row.partner,
    operation: row.operation,
    key: row.key,
    fingerprint: row.fingerprint,
    reference: row.reference,
    amount: row.amount,
    currency: row.currency,
    status: row.status,
    attempt: row.attempt,
    // A settled intent holds no lease; the row keeps the last one for the attempt's history.
    leaseExpiresAt: row.settled_at === null ? row.lease_expires_at : null,
    owner: row.owner,
    partnerHonoursKey: row.partner_honours_key,
    partnerReference: row.partner_reference,
    response: row.response,
    reason: row.reason,
    resolvedBy: row.resolved_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    settledAt: row.settled_at,
    attempts: attempts.map(toAttempt),
  };
}

function toAttempt(row: AttemptRow): Attempt {
  return {
    attempt: row.attempt,
    owner: row.owner,
    startedAt: row.started_at,
    leaseExpiresAt: row.lease_expires_at,
    endedAt: row.ended_at,
    outcome: row.outcome,
    partnerReference: row.partner_reference,
    response: row.response,
    error: row.error,
    resolution: row.resolution,
    resolvedBy: row.resolved_by,
    resolvedAt: row.resolved_at,
  };
}
