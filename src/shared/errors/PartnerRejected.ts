/**
 * Throw from a partner callback when the partner definitely refused and did nothing (card declined,
 * invalid number). The intent becomes `rejected` and every replay gets the same rejection.
 */
export class PartnerRejected extends Error {
  override readonly name = 'PartnerRejected';
  readonly partnerCode?: string;
  readonly details?: unknown;

  constructor(message: string, options: { code?: string; details?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.partnerCode = options.code;
    this.details = options.details;
  }
}
