import type { Pool } from 'pg';
import { raiseDiscrepancy } from '../discrepancies/sql/raiseDiscrepancy.js';
import { LateCompletionError } from '../shared/errors/LateCompletionError.js';
import type { Logger } from '../shared/logger.js';
import type { Intent, Json } from '../shared/types.js';
import { recordLateAnswer } from './sql/recordLateAnswer.js';
import { inDatabase } from './unavailable.js';

/** A success the partner reported for `attempt` after `intent` was settled another way. */
export interface LateAnswer {
  intent: Intent;
  attempt: number;
  partnerReference: string | null;
  response: Json | null;
  /** The intent was `not_executed` on this attempt and is now completed with this answer. */
  corrected: boolean;
}

/**
 * Keeps a late answer in its attempt's history, raises it as a `late_completion` discrepancy for finance,
 * and throws the `LateCompletionError` the caller gets instead of a result (invariant 4: never a silent
 * overwrite, never lost).
 */
export async function raiseLateCompletion(pool: Pool, log: Logger, late: LateAnswer): Promise<never> {
  const { intent, attempt, partnerReference, response, corrected } = late;
  const context = { partner: intent.partner, key: intent.key, intentId: intent.id };
  await inDatabase('recording a late answer', context, () =>
    recordLateAnswer(pool, { intentId: intent.id, attempt, partnerReference, response }),
  );
  const discrepancyId = await inDatabase('raising a late completion', context, () =>
    raiseDiscrepancy(pool, {
      kind: 'late_completion',
      partner: intent.partner,
      intentId: intent.id,
      attempt,
      runId: null,
      reference: intent.reference,
      partnerReference,
      amountAtRisk: intent.amount,
      currency: intent.currency,
      summary: corrected
        ? `The partner confirmed attempt ${attempt} after reconciliation had settled it as not executed; ` +
          'the intent is now completed so it is not charged again. Check why the report missed it.'
        : `The partner confirmed attempt ${attempt} after the intent was settled as ${intent.status}` +
          ` (attempt ${intent.attempt}); it may have executed more than once.`,
      details: {
        lateAttempt: attempt,
        settledStatus: intent.status,
        settledAttempt: intent.attempt,
        corrected,
        response,
      },
      dedupeKey: `late_completion:${intent.id}:${attempt}`,
      actor: 'ledger',
    }),
  );
  log.error(
    { partner: intent.partner, key: intent.key, intentId: intent.id, attempt, discrepancyId },
    'late completion raised',
  );
  throw new LateCompletionError({
    partner: intent.partner,
    key: intent.key,
    intentId: intent.id,
    attempt,
    discrepancyId,
    settledAs: intent.status,
    corrected,
  });
}
