import { type IntentErrorContext, LedgerError } from './LedgerError.js';

/**
 * The key was used before with a different payload. Either the key is not stable per logical message
 * (derive it from the business key, never from a delivery tag) or two different operations share it.
 */
export class IdempotencyKeyConflictError extends LedgerError {
  readonly code = 'IDEMPOTENCY_KEY_CONFLICT';
  override readonly name = 'IdempotencyKeyConflictError';

  constructor(context: IntentErrorContext) {
    super(
      `${context.partner}/${context.key}: this key was already used with a different payload; ` +
        'use a key that identifies exactly one logical call',
      context,
    );
  }
}
