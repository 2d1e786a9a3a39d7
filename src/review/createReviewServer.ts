/**
 * Builds the review site's server and wires its parts: `registerAuth.ts` (security headers, sign-in,
 * sessions, CSRF), `registerDiscrepancyRoutes.ts` (the pages and the JSON API), and the not-found and error
 * handlers below. The pages themselves are drawn by `layout.ts`, `listPage.ts`, `detailPage.ts`,
 * `loginPage.ts` and `messagePage.ts`.
 */
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { parseForm } from './httpParsing.js';
import { messagePage } from './messagePage.js';
import { registerAuth } from './registerAuth.js';
import { registerDiscrepancyRoutes } from './registerDiscrepancyRoutes.js';
import { createReviewContext, isApi } from './reviewContext.js';
import { SessionStore } from './sessions.js';

export interface ReviewServerOptions {
  /** The ledger's database (`poolOf(dataSource)`). */
  pool: Pool;
  /** The shared secret: typed into the login form by people, sent as `Authorization: Bearer` by scripts. */
  token: string;
  /** A pino logger for request logs; silent when absent. The token is never logged. */
  logger?: FastifyBaseLogger;
  /**
   * Behind a TLS-terminating proxy: trust `X-Forwarded-Proto`/`-Host` for the same-origin check and the
   * cookie's `Secure` flag. Only when the proxy is the only way in.
   * @default false
   */
  trustProxy?: boolean;
  /** Idle time after which a session ends. @default 8 hours */
  sessionTtlMs?: number;
}

const FORM_BODY_LIMIT = 256 * 1024;

/**
 * The finance review site: server-rendered pages (list, detail, report, CSV export) for people who sign in
 * with the token, and a JSON API for scripts that send it as a bearer token. No JavaScript, no external
 * resource; every state change is a POST protected by a per-session CSRF token plus an Origin/Referer
 * same-origin check (bearer calls carry no ambient credential and are exempt).
 */
export function createReviewServer(options: ReviewServerOptions): FastifyInstance {
  if (typeof options.token !== 'string' || options.token.length === 0)
    throw new TypeError('the review server needs a non-empty token');
  const { pool, token } = options;
  const sessions = new SessionStore(options.sessionTtlMs);
  const ctx = createReviewContext({ pool, token, sessions });

  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    trustProxy: options.trustProxy ?? false,
    bodyLimit: FORM_BODY_LIMIT,
  });

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    (_request, body, done) => done(null, parseForm(body as string)),
  );

  registerAuth(app, ctx);
  registerDiscrepancyRoutes(app, ctx);

  // ---- errors --------------------------------------------------------------------------------------

  app.setNotFoundHandler((request, reply) => {
    if (isApi(request))
      return reply.code(404).send({ error: { code: 'NOT_FOUND', message: 'no such endpoint' } });
    return ctx.notFoundPage(request, reply);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status =
      error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) request.log.error({ err: error }, 'review: request failed');
    const message = status === 500 ? 'Something went wrong on our side; it has been logged.' : error.message;
    reply.code(status);
    if (isApi(request)) return reply.send({ error: { code: error.code ?? 'ERROR', message } });
    return reply
      .type('text/html; charset=utf-8')
      .send(messagePage({ title: status === 500 ? 'Server error' : 'Bad request', message, viewer: null }));
  });

  return app;
}
