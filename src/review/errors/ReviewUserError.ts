import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';

/**
 * A change to the review site's people that cannot be made: a name that is taken or not allowed, an unknown
 * role, or a person who does not exist. `code` says which: `USER_EXISTS`, `BAD_USER_NAME`, `BAD_ROLE`,
 * `USER_NOT_FOUND`.
 */
export class ReviewUserError extends LedgerError {
  override readonly name = 'ReviewUserError';

  constructor(
    readonly code: 'USER_EXISTS' | 'BAD_USER_NAME' | 'BAD_ROLE' | 'USER_NOT_FOUND',
    message: string,
  ) {
    super(message, NO_INTENT);
  }
}
