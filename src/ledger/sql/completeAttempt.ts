import type { PreparedQueryable } from '../../database/queryable.js';
import type { Json } from '../../shared/types.js';
import { preparedStatement } from './preparedStatement.js';

export interface CompletionInput {
  intentId: string;
  attempt: number;
  partnerReference: string | null;
  response: Json | null;
  /** Who answered, stored as the intent's `resolved_by` (the ledger passes `caller`). */
  by: string;
}

export interface CompletedRow {
  id: string;
  /** The intent's attempt: the one answered, or a later one when an older answer completed it. */
  attempt: number;
}

/**
 * The common case, alone: the attempt is the intent's current one and still running, so it has no row of its
 * own (migration 0006) and completing it is one UPDATE. No CTEs: with them every completion also paid for
 * the attempt-row work below, a measurable share of the server's time for a claim and its completion
 * (docs/PERFORMANCE.md, "The ledger's hot path").
 */
const COMPLETE_RUNNING = preparedStatement(
  'intent_ledger_complete_running',
  `UPDATE intents
      SET status = 'completed', partner_reference = $3, response = $4::jsonb,
          settled_at = now(), updated_at = now(), resolved_by = $5
    WHERE id = $1 AND attempt = $2 AND status = 'in_progress'
    RETURNING id, attempt`,
);

/** Every other completion the fencing allows, with the attempt rows it concerns. */
const COMPLETE_SETTLING = preparedStatement(
  'intent_ledger_complete',
  `WITH done AS (
       UPDATE intents
          SET status = 'completed', partner_reference = $3, response = $4::jsonb,
              settled_at = now(), updated_at = now(), resolved_by = $5
        WHERE id = $1 AND status IN ('in_progress', 'unknown')
          AND (attempt = $2 OR (partner_honours_key AND attempt > $2))
        RETURNING id, attempt, owner, attempt_started_at, lease_expires_at
     ), answered AS (
       UPDATE intent_attempts
          SET outcome = 'completed', ended_at = now(), partner_reference = $3, response = $4::jsonb
        WHERE intent_id = $1 AND attempt = $2 AND (outcome IS NULL OR outcome = 'unknown')
          AND EXISTS (SELECT 1 FROM done)
     ), superseded AS (
       INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at)
       SELECT id, attempt, owner, attempt_started_at, lease_expires_at FROM done WHERE attempt <> $2
       ON CONFLICT (intent_id, attempt) DO NOTHING
     )
     SELECT id, attempt FROM done`,
);

/**
 * Records that the partner executed attempt `attempt`.
 *
 * Usually that is one write: the intent row describes its running attempt, which this completes (migration
 * 0006; {@link COMPLETE_RUNNING}). Otherwise one more statement, itself atomic: the answered attempt has a row
 * of its own when it ended as `unknown` first or a re-claim left it behind, and that row is completed too;
 * when an older attempt's answer completes the intent (a partner that honours our key), the current attempt
 * did not complete, so it gets its own row, without an outcome.
 *
 * Fencing: the intent must still be on this attempt and unsettled (`in_progress`, or `unknown` when an
 * answer arrives after the caller gave up waiting: a late truth settles it). For a partner that honours our
 * key, an older attempt's answer is the same execution and is accepted too. Anything else returns no row and
 * the caller decides whether it is a harmless repeat or a late completion (invariant 4).
 */
export async function completeAttempt(
  db: PreparedQueryable,
  input: CompletionInput,
): Promise<CompletedRow | undefined> {
  const values = [
    input.intentId,
    input.attempt,
    input.partnerReference,
    input.response === null ? null : JSON.stringify(input.response),
    input.by,
  ];
  const running = await db.query<CompletedRow>(COMPLETE_RUNNING(values));
  if (running.rows[0]) return running.rows[0];
  const settling = await db.query<CompletedRow>(COMPLETE_SETTLING(values));
  return settling.rows[0];
}
