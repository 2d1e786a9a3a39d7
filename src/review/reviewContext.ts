/**
 * What the review server's route groups share: the database, the token, the sessions, who made each
 * request (recorded by the authentication hook in `registerAuth.ts`), and the per-request helpers that
 * read it. `createReviewServer` makes one context and hands it to every route group.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import type { Flash, Viewer } from './layout.js';
import { messagePage } from './messagePage.js';
import type { Person } from './person.js';
import { mayDecide } from './reviewUsers.js';
import type { ReviewSession, SessionStore } from './sessions.js';

/**
 * Who made a request: a bearer token (a person's own, or `REVIEW_TOKEN` for scripts), a person with a
 * session, or a person an authenticating proxy named (`proxy`, no session: each request carries the header).
 */
type Auth =
  | { kind: 'bearer'; person: Person }
  | { kind: 'session'; session: ReviewSession }
  | { kind: 'proxy'; person: Person; csrf: string };

/** The person behind an authenticated request. */
export function personOf(auth: Auth): Person {
  return auth.kind === 'session' ? auth.session.person : auth.person;
}

export interface ReviewContext {
  /** The ledger's database. */
  readonly pool: Pool;
  /** The shared secret: the sign-in form's token and the scripts' bearer token. */
  readonly token: string;
  /** The signed-in people. */
  readonly sessions: SessionStore;
  /** Above this amount at risk, resolving or dismissing needs a second resolver; undefined: never. */
  readonly approvalThreshold?: string;
  /** Who made each request, set by the authentication hook; absent on the public routes. */
  readonly auth: WeakMap<FastifyRequest, Auth>;
  /** The person (with the CSRF token forms must carry) or script behind a request. */
  viewerOf(request: FastifyRequest): Viewer;
  /** The session's one-shot message, removed as it is read; always null for scripts. */
  takeFlash(request: FastifyRequest): Flash | null;
  /** A message for the session's next page (after a redirect); scripts have no session to keep it. */
  setFlash(request: FastifyRequest, flash: Flash): void;
  /** The HTML "Not found" page, for a missing discrepancy and for an unknown address. */
  notFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply;
}

/** One per server; who made each request is filled in by the authentication hook as requests arrive. */
export function createReviewContext(options: {
  pool: Pool;
  token: string;
  sessions: SessionStore;
  approvalThreshold?: string;
}): ReviewContext {
  const { pool, token, sessions, approvalThreshold } = options;
  const auth = new WeakMap<FastifyRequest, Auth>();

  function viewerOf(request: FastifyRequest): Viewer {
    const who = auth.get(request);
    if (!who) return { csrf: null, name: null, session: false, canDecide: false };
    const person = personOf(who);
    return {
      csrf: who.kind === 'session' ? who.session.csrf : who.kind === 'proxy' ? who.csrf : null,
      name: person.name,
      role: person.role,
      session: who.kind === 'session',
      canDecide: mayDecide(person.role),
      sharedToken: person.via === 'review-token',
    };
  }

  function takeFlash(request: FastifyRequest): Flash | null {
    const who = auth.get(request);
    if (who?.kind !== 'session') return null;
    const flash = who.session.flash;
    who.session.flash = null;
    return flash;
  }

  function setFlash(request: FastifyRequest, flash: Flash): void {
    const who = auth.get(request);
    if (who?.kind === 'session') who.session.flash = flash;
  }

  function notFoundPage(request: FastifyRequest, reply: FastifyReply) {
    return reply
      .code(404)
      .type('text/html; charset=utf-8')
      .send(
        messagePage({
          title: 'Not found',
          message: 'There is no such page or discrepancy.',
          viewer: viewerOf(request),
        }),
      );
  }

  return { pool, token, sessions, approvalThreshold, auth, viewerOf, takeFlash, setFlash, notFoundPage };
}

/** Requests under `/api/` come from scripts: they are answered in JSON, never with a page or a redirect. */
export function isApi(request: FastifyRequest): boolean {
  return request.url.startsWith('/api/');
}
