import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';

/** Every review change records who made it; an empty or blank `by` is refused. */
export class ActorRequiredError extends LedgerError {
  readonly code = 'ACTOR_REQUIRED';
  override readonly name = 'ActorRequiredError';

  constructor(action: string) {
    super(`who is making the change ("by") is required to ${action}`, NO_INTENT);
  }
}
