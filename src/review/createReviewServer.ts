/**
 * Builds the review site's server and wires its parts: `registerAuth.ts` (security headers, sign-in,
 * sessions, CSRF, with `signInThrottle.ts` limiting wrong tokens), `registerDiscrepancyRoutes.ts` (the pages and the JSON API), and the not-found and error
 * handlers below. The pages themselves are drawn by `layout.ts`, `listPage.ts`, `detailPage.ts`,
 * `loginPage.ts` and `messagePage.ts`.
 */
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from 'fastify';
import type { Pool } from 'pg';
import { parseForm } from './httpParsing.js';
import { messagePage } from './messagePage.js';
import { registerAuth } from './registerAuth.js';
import { registerDiscrepancyApi } from './registerDiscrepancyApi.js';
import { registerDiscrepancyRoutes } from './registerDiscrepancyRoutes.js';
import { createReviewContext, isApi } from './reviewContext.js';
import { SessionStore } from './sessions.js';
import { SignInThrottle, type SignInThrottleOptions } from './signInThrottle.js';

export interface ReviewServerOptions {
  /** The ledger's database (`poolOf(dataSource)`). */
  pool: Pool;
  /**
   * `REVIEW_TOKEN`: the bootstrap admin's secret (typed into the login form, or sent as `Authorization:
   * Bearer` by scripts). People sign in with their personal tokens (`intent-ledger users add`).
   */
  token: string;
  /** A pino logger for request logs; silent when absent. The token is never logged. */
  logger?: FastifyBaseLogger;
  /**
   * Behind a TLS-terminating proxy: trust `X-Forwarded-Proto`/`-Host` for the same-origin check and the
   * cookie's `Secure` flag; wrong tokens then count against the address the proxy puts last in
   * `X-Forwarded-For` (the one it saw). `true` trusts any peer (only when the proxy is the only way in); a
   * list of the proxies' IP addresses trusts those alone. Also decides who may send `identityHeader`.
   * @default false
   */
  trustProxy?: boolean | string[];
  /**
   * The header an authenticating proxy in front names the signed-in person in (e.g. `X-Forwarded-Email`),
   * honoured only on requests straight from a `trustProxy` address, which must then be a list (with `true`,
   * anyone could name a person: refused with a TypeError). The name must be a review user
   * (`intent-ledger users add`), whose role applies; no token is asked for.
   * @default undefined (no proxy identity: people sign in with their token)
   */
  identityHeader?: string;
  /** Idle time after which a session ends. @default 8 hours */
  sessionTtlMs?: number;
  /**
   * Absolute lifetime of a session, counted from sign-in: it ends then even if used every minute.
   * @default 12 hours
   */
  sessionMaxLifetimeMs?: number;
  /**
   * `Strict-Transport-Security` max-age, sent only on requests that reached a trusted proxy over HTTPS
   * (`trustProxy` and `X-Forwarded-Proto: https`); `0` sends none.
   * @default 31536000 (one year)
   */
  hstsMaxAgeSeconds?: number;
  /**
   * Limits guessing the token: after `maxFailures` different wrong tokens (sign-in form and bearer together)
   * from one address within `windowMs`, that address gets 429 with `Retry-After`, its token not even
   * compared, until the oldest failure is `windowMs` old. IPv6 addresses count by /64. Signed-in sessions and
   * other addresses are unaffected.
   * @default { maxFailures: 10, windowMs: 15 minutes, maxAddresses: 10000 }
   */
  signInThrottle?: SignInThrottleOptions;
  /**
   * Four eyes on big money is the ledger's: `intent-ledger approval-threshold set` (or
   * `setApprovalThreshold`) sets a threshold per currency that every program obeys, this site included.
   * This option only makes the site stricter: here, an amount at risk (its absolute value, in its own
   * currency) above this decimal also needs a second resolver, whatever the currency. Resolving or
   * dismissing such a discrepancy is a proposal until a second resolver, not the proposer, approves it; both
   * people and both notes are in the history. Bulk changes refuse such discrepancies.
   * @default undefined (the ledger's thresholds only)
   */
  approvalThreshold?: string;
  /** The clock for session expiry and the sign-in throttle; tests move it instead of sleeping. @default Date.now */
  now?: () => number;
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
  const now = options.now ?? Date.now;
  const sessions = new SessionStore(options.sessionTtlMs, undefined, now, options.sessionMaxLifetimeMs);
  const throttle = new SignInThrottle(options.signInThrottle, now);
  // A header naming the person is as good as a password: trusted from every peer, it lets anyone who can
  // reach the port sign in as anybody. Only the proxies' own addresses may send it.
  if (options.identityHeader !== undefined && !Array.isArray(options.trustProxy))
    throw new TypeError(
      "identityHeader needs trustProxy to list the authenticating proxy's IP addresses (['10.0.0.5']): " +
        'with trustProxy true or unset, any client could name a person',
    );
  if (options.approvalThreshold !== undefined && !/^\d+(\.\d+)?$/.test(options.approvalThreshold))
    throw new TypeError('approvalThreshold must be a non-negative decimal string such as "10000.00"');
  const ctx = createReviewContext({ pool, token, sessions, approvalThreshold: options.approvalThreshold });

  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    trustProxy: options.trustProxy ?? false,
    bodyLimit: FORM_BODY_LIMIT,
    // Fastify's own request lines log the URL with its query string: a mistaken `?token=` would be kept in
    // the logs. `registerAuth.ts` logs each request by path instead.
    logController: new LogController({ disableRequestLogging: true }),
  });

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    (_request, body, done) => done(null, parseForm(body as string)),
  );

  registerAuth(app, ctx, {
    throttle,
    trustProxy: options.trustProxy ?? false,
    identityHeader: options.identityHeader,
    hstsMaxAgeSeconds: options.hstsMaxAgeSeconds ?? 31_536_000,
  });
  registerDiscrepancyRoutes(app, ctx);
  registerDiscrepancyApi(app, ctx);

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
