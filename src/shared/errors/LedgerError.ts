/** Context every ledger error carries, so a caller can log or route it without parsing messages. */
export interface LedgerErrorContext {
  partner?: string;
  key?: string;
  intentId?: string;
  cause?: unknown;
}

/** Base of every error the ledger raises on purpose. `code` is stable; messages may improve. */
export abstract class LedgerError extends Error {
  abstract readonly code: string;
  readonly partner?: string;
  readonly key?: string;
  readonly intentId?: string;

  constructor(message: string, context: LedgerErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.partner = context.partner;
    this.key = context.key;
    this.intentId = context.intentId;
  }
}
