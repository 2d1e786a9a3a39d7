/**
 * Throw from a partner callback when you know the request never took effect (you checked before sending,
 * or the partner answered that it did nothing and a retry is welcome). The intent becomes `not_executed`.
 */
export class PartnerNotExecuted extends Error {
  override readonly name = 'PartnerNotExecuted';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}
