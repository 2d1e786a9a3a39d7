import type { ReviewRole } from './reviewUsers.js';

/**
 * Who is behind a request to the review site, authenticated: a person with a personal token (`token`), a
 * person an authenticating proxy named (`proxy`), or whoever holds `REVIEW_TOKEN`, the bootstrap admin
 * (`review-token`). The history records `name`; nobody types it.
 */
export interface Person {
  readonly name: string;
  /** Re-read from `review_users` on every request of a session, so a change or a revocation applies at once. */
  role: ReviewRole;
  readonly via: 'token' | 'proxy' | 'review-token';
}

/** The bootstrap admin as the history records them when signed in with `REVIEW_TOKEN`. */
const REVIEW_TOKEN_ADMIN = 'review-token admin';

export function reviewTokenAdmin(): Person {
  return { name: REVIEW_TOKEN_ADMIN, role: 'admin', via: 'review-token' };
}
