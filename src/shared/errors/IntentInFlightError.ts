import { type IntentErrorContext, LedgerError } from './LedgerError.js';

/**
 * Another attempt holds the lease for this (partner, key): the partner may be executing it right now.
 * Retry later (for a broker: nack with a delay); never call the partner around the ledger.
 */
export class IntentInFlightError extends LedgerError {
  readonly code = 'INTENT_IN_FLIGHT';
  override readonly name = 'IntentInFlightError';
  /** When the current lease ends; after that the intent counts as outcome unknown. */
  readonly leaseExpiresAt: Date;

  constructor(context: IntentErrorContext & { leaseExpiresAt: Date }) {
    super(
      `${context.partner}/${context.key}: another attempt is in flight until ${context.leaseExpiresAt.toISOString()}; retry after that`,
      context,
    );
    this.leaseExpiresAt = context.leaseExpiresAt;
  }
}
