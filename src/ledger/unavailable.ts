import type { LedgerErrorContext } from '../shared/errors/LedgerError.js';
import { LedgerUnavailableError } from '../shared/errors/LedgerUnavailableError.js';

/** Which intent a database step was about: partner and key must be said, `undefined` where unknown. */
export type StepContext = Pick<LedgerErrorContext, 'partner' | 'key' | 'intentId'>;

/** Why the ledger did not go on: its database failed `during` a step. */
export function unavailable(during: string, context: StepContext, cause: unknown): LedgerUnavailableError {
  return new LedgerUnavailableError({ ...context, during, cause });
}

/** Runs one step against the database; a failure becomes the LedgerUnavailableError of {@link unavailable}. */
export async function inDatabase<T>(
  during: string,
  context: StepContext,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw unavailable(during, context, error);
  }
}
