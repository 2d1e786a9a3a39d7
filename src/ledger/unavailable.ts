import { LedgerUnavailableError } from '../shared/errors/LedgerUnavailableError.js';

/** Why the ledger did not go on: its database failed `during` a step. */
export function unavailable(
  during: string,
  context: { partner?: string; key?: string; intentId?: string },
  cause: unknown,
): LedgerUnavailableError {
  return new LedgerUnavailableError({ ...context, during, cause });
}

/** Runs one step against the database; a failure becomes the LedgerUnavailableError of {@link unavailable}. */
export async function inDatabase<T>(
  during: string,
  context: { partner?: string; key?: string; intentId?: string },
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw unavailable(during, context, error);
  }
}
