/**
 * Context every ledger error carries, so a caller can log or route it (park the message of `partner`/`key`)
 * without parsing messages. `partner` and `key` are required, never optional: each place that raises an
 * error has to say them, and `undefined` is written out only where the ledger cannot know them (an error
 * about no intent at all, or a two-phase call that names only an intent id the process no longer holds).
 */
export interface LedgerErrorContext {
  partner: string | undefined;
  key: string | undefined;
  intentId?: string;
  cause?: unknown;
}

/** The context of an error about one intent the ledger is looking at: partner and key are known. */
export interface IntentErrorContext extends LedgerErrorContext {
  partner: string;
  key: string;
}

/** Base of every error the ledger raises on purpose. `code` is stable; messages may improve. */
export abstract class LedgerError extends Error {
  abstract readonly code: string;
  readonly partner: string | undefined;
  readonly key: string | undefined;
  readonly intentId: string | undefined;

  constructor(message: string, context: LedgerErrorContext) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.partner = context.partner;
    this.key = context.key;
    this.intentId = context.intentId;
  }
}

/** How an error names its intent in its message: `partner/key`, else `intent <id>`, else `?`. */
export function intentLabel(context: LedgerErrorContext): string {
  if (context.partner !== undefined && context.key !== undefined) return `${context.partner}/${context.key}`;
  if (context.intentId !== undefined) return `intent ${context.intentId}`;
  return '?';
}

/** The context of an error about no one intent (configuration, schema, discrepancies by id). */
export const NO_INTENT: LedgerErrorContext = Object.freeze({ partner: undefined, key: undefined });
