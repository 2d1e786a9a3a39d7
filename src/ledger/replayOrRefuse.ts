import { IntentInFlightError } from '../shared/errors/IntentInFlightError.js';
import { IntentOutcomeUnknownError } from '../shared/errors/IntentOutcomeUnknownError.js';
import { IntentRejectedError, type RejectionReason } from '../shared/errors/IntentRejectedError.js';
import type { Logger } from '../shared/logger.js';
import { IntentStatus } from '../shared/status.js';
import type { Replay } from '../shared/types.js';
import type { LedgerMetrics } from './metrics.js';
import type { ExistingIntentRow } from './sql/claimIntent.js';
import type { KeyedIntentRow } from './sql/readIntentByKey.js';

/**
 * What a delivery gets for an intent it may not claim (same key, same payload): the stored result of a
 * completed intent, or the error saying why the partner is not called (rejected before, in flight, outcome
 * unknown). The caller has already sent claimable intents round again; anything else reaching here is final.
 */
export function replayOrRefuse(
  existing: ExistingIntentRow,
  context: { partner: string; key: string; intentId: string },
  metrics: LedgerMetrics,
  log: Logger,
): Replay {
  switch (existing.status) {
    case IntentStatus.Completed:
    case IntentStatus.Rejected:
      return replayFinal(existing, context, metrics, log);
    case IntentStatus.InProgress:
      if (existing.lease_running) {
        metrics.inFlightRefusals.inc({ partner: context.partner });
        throw new IntentInFlightError({ ...context, leaseExpiresAt: existing.lease_expires_at as Date });
      }
      metrics.unknownOutcomes.inc({ partner: context.partner });
      throw new IntentOutcomeUnknownError({
        ...context,
        attempt: existing.attempt,
        detail: 'its lease ended without an answer (the worker may have died mid-call)',
      });
    case IntentStatus.Unknown:
      metrics.unknownOutcomes.inc({ partner: context.partner });
      throw new IntentOutcomeUnknownError({ ...context, attempt: existing.attempt });
  }
  // not_executed is claimable (the caller claims again); the schema allows no other status.
  throw new Error(`intent ${existing.id} reached replayOrRefuse as ${existing.status}`);
}

/**
 * What a delivery gets for an intent with a final outcome (completed, rejected): the stored result, or the
 * rejection again. Needs only what a plain read of the key returns ({@link KeyedIntentRow}).
 */
export function replayFinal(
  existing: KeyedIntentRow,
  context: { partner: string; key: string; intentId: string },
  metrics: LedgerMetrics,
  log: Logger,
): Replay {
  if (existing.status === IntentStatus.Completed) {
    metrics.replays.inc({ partner: context.partner });
    log.info(
      { partner: context.partner, key: context.key, intentId: context.intentId, attempt: existing.attempt },
      'duplicate suppressed: replaying stored result',
    );
    return {
      kind: 'replay',
      result: {
        intentId: existing.id,
        status: 'completed',
        replayed: true,
        attempt: existing.attempt,
        partnerReference: existing.partner_reference,
        response: existing.response,
      },
    };
  }
  if (existing.status === IntentStatus.Rejected) {
    metrics.replays.inc({ partner: context.partner });
    throw new IntentRejectedError({ ...context, reason: existing.reason as RejectionReason, replayed: true });
  }
  throw new Error(`intent ${existing.id} reached replayFinal as ${existing.status}`);
}
