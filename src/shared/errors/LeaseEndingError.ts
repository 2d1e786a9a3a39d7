/** The reason a callback's signal carries when the lease is about to end. */
export class LeaseEndingError extends Error {
  override readonly name = 'AbortError';
  constructor(intentId: string, attempt: number) {
    super(`lease of intent ${intentId} attempt ${attempt} is ending`);
  }
}
