import { type IntentErrorContext, LedgerError } from './LedgerError.js';

/** The partner definitely refused this call (it did nothing). Replays return the same rejection. */
export class IntentRejectedError extends LedgerError {
  readonly code = 'INTENT_REJECTED';
  override readonly name = 'IntentRejectedError';
  /** The partner's reason as recorded when it refused. */
  readonly reason: RejectionReason;
  /** True when this is the stored rejection of an earlier call, not a fresh answer from the partner. */
  readonly replayed: boolean;

  constructor(context: IntentErrorContext & { reason: RejectionReason; replayed: boolean }) {
    super(`${context.partner}/${context.key}: rejected by the partner: ${context.reason.message}`, context);
    this.reason = context.reason;
    this.replayed = context.replayed;
  }
}

/** What is kept of a rejection: a message and, where known, the partner's code and HTTP status. */
export interface RejectionReason {
  message: string;
  code?: string;
  status?: number;
  details?: unknown;
}
