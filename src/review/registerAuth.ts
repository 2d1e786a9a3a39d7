/**
 * Who may use the review site, and the protections every request and response gets: security headers,
 * authentication (the bearer token for scripts, a session cookie for people, the sign-in form for everyone
 * else), the same-origin and CSRF check on every state-changing request, signing in and out, and the limit
 * on wrong tokens per address (`signInThrottle.ts`). `createReviewServer` registers this before any other
 * route group.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type FormBody, field, formOf, parseCookies, serializeSessionCookie } from './httpParsing.js';
import { loginPage, logoutPage } from './loginPage.js';
import { messagePage } from './messagePage.js';
import { type Person, reviewTokenAdmin } from './person.js';
import { isApi, personOf, type ReviewContext } from './reviewContext.js';
import { activeRole, mayDecide, personOfToken } from './reviewUsers.js';
import { secretsMatch } from './sessions.js';
import { clientAddressOf, type SignInThrottle } from './signInThrottle.js';

/** The session cookie's name; its value is a random id that means something only to this process. */
export const SESSION_COOKIE = 'il_review_session';

/** Sent with every response, pages and API alike: no script, no outside resource, no framing, no caching. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

export interface AuthOptions {
  /** Counts wrong tokens (form and bearer) per address and refuses an address past its limit. */
  throttle: SignInThrottle;
  /**
   * As the server's `trustProxy`: decides which address a wrong token counts against, and which peers may
   * name people with `identityHeader`.
   */
  trustProxy: boolean | string[];
  /** The request header an authenticating proxy names the person in (lower case), e.g. `x-forwarded-email`. */
  identityHeader?: string;
  /** HSTS max-age for requests a trusted proxy received over HTTPS; 0 for none. */
  hstsMaxAgeSeconds: number;
}

/** A request's path without its query string: what logs may keep (a query may hold a mistaken `?token=`). */
function pathOf(request: FastifyRequest): string {
  const cut = request.url.indexOf('?');
  return cut === -1 ? request.url : request.url.slice(0, cut);
}

/**
 * Registers the security headers, the authentication hook, the same-origin/CSRF hook, and the routes to
 * sign in and out (`/login`, `/logout`) plus the public `/favicon.ico`.
 */
export function registerAuth(app: FastifyInstance, ctx: ReviewContext, options: AuthOptions): void {
  const { token, sessions, auth, viewerOf } = ctx;
  const { throttle, trustProxy, hstsMaxAgeSeconds } = options;
  const identityHeader = options.identityHeader?.toLowerCase();

  app.addHook('onSend', async (request, reply, payload) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    // Only when a trusted proxy says the browser came over HTTPS: on plain HTTP the header means nothing,
    // and without trustProxy anybody could send X-Forwarded-Proto.
    if (trustProxy && request.protocol === 'https' && hstsMaxAgeSeconds > 0)
      reply.header('strict-transport-security', `max-age=${hstsMaxAgeSeconds}`);
    return payload;
  });

  // The access log: method, path (never the query string), status and time.
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        path: pathOf(request),
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'review: request',
    );
  });

  // By matched route, not by raw URL: only the sign-in form and the icon are open to everyone.
  const isPublic = (request: FastifyRequest) => {
    const route = request.routeOptions.url;
    return route === '/login' || route === '/favicon.ico';
  };

  /** The person a token belongs to: `REVIEW_TOKEN` (the bootstrap admin), a personal token, or nobody. */
  async function personOfAnyToken(given: string): Promise<Person | null> {
    if (secretsMatch(token, given)) return reviewTokenAdmin();
    const found = await personOfToken(ctx.pool, given);
    return found && { ...found, via: 'token' };
  }

  // 1. Authentication: a bearer token (scripts and people), a session cookie (people), or the identity an
  // authenticating proxy in front vouches for; nothing else gets in.
  app.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) return;
    const header = request.headers.authorization;
    if (header !== undefined) {
      // A throttled address is refused before its token is compared: a right guess now looks like any other.
      const address = clientAddressOf(request, trustProxy);
      const wait = throttle.retryAfterMs(address);
      if (wait > 0) return sendThrottled(request, reply, wait, '/');
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const person = match ? await personOfAnyToken(match[1]) : null;
      if (person) {
        auth.set(request, { kind: 'bearer', person });
        return;
      }
      request.log.warn({ path: pathOf(request), ip: request.ip }, 'review: wrong bearer token');
      // Only a token that was compared is a guess; another scheme or an empty bearer can never get in.
      if (match) recordFailure(request, address, match[1]);
      reply.header('www-authenticate', 'Bearer error="invalid_token"');
      return sendUnauthorised(request, reply, 'The bearer token is not valid.');
    }
    const named = identityHeader ? request.headers[identityHeader] : undefined;
    if (typeof named === 'string' && named !== '' && fromTrustedProxy(request)) {
      const role = await activeRole(ctx.pool, named);
      if (!role) {
        request.log.warn(
          { path: pathOf(request) },
          'review: the proxy named someone who is not a review user',
        );
        return sendForbidden(
          request,
          reply,
          'You are not a user of the review site. Ask an admin to add you.',
        );
      }
      auth.set(request, {
        kind: 'proxy',
        person: { name: named, role, via: 'proxy' },
        csrf: proxyCsrf(named),
      });
      return;
    }
    const session = sessions.get(parseCookies(request.headers.cookie).get(SESSION_COOKIE));
    if (session) {
      // A revoked person's session ends at once; a changed role applies at once.
      if (session.person.via !== 'review-token') {
        const role = await activeRole(ctx.pool, session.person.name);
        if (!role) sessions.deleteAllOf(session.person.name);
        else session.person.role = role;
      }
      if (sessions.get(session.id)) {
        auth.set(request, { kind: 'session', session });
        return;
      }
    }
    if ((request.method === 'GET' || request.method === 'HEAD') && !isApi(request)) {
      return reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
    }
    reply.header('www-authenticate', 'Bearer');
    return sendUnauthorised(request, reply, 'Sign in first.');
  });

  /**
   * The CSRF token of a person the proxy names: the browser sends the proxy's credential with every request,
   * so their forms need one too, but there is no session to keep it in. An HMAC of the name under a key of
   * this process: the same on every page, worthless to anyone who cannot read our pages.
   */
  const proxyCsrfKey = randomBytes(32);
  const proxyCsrf = (name: string) => createHmac('sha256', proxyCsrfKey).update(name).digest('base64url');

  /**
   * Whether the request came straight from a proxy trusted to name people: `trustProxy` is on and the TCP
   * peer is one of its addresses (any, when `trustProxy` is `true`). Anyone else sending the header is
   * ignored, as if it were absent.
   */
  function fromTrustedProxy(request: FastifyRequest): boolean {
    if (trustProxy === false) return false;
    if (trustProxy === true) return true;
    const peer = request.socket.remoteAddress ?? '';
    return trustProxy.some((address) => address === peer || `::ffff:${address}` === peer);
  }

  // 1b. Roles: only resolvers and admins change anything (signing out aside).
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD' || isPublic(request)) return;
    if (request.routeOptions.url === '/logout') return;
    const who = auth.get(request);
    if (!who) return;
    const person = personOf(who);
    if (!mayDecide(person.role)) {
      request.log.warn(
        { path: pathOf(request), who: person.name },
        'review: a viewer tried to change something',
      );
      return sendForbidden(
        request,
        reply,
        `As a ${person.role} you can read and export, not change anything. Ask an admin for the resolver role.`,
      );
    }
  });

  // 2. Cross-site request forgery: every POST from a browser must come from our own pages.
  app.addHook('preHandler', async (request, reply) => {
    if (
      request.method !== 'POST' &&
      request.method !== 'PUT' &&
      request.method !== 'PATCH' &&
      request.method !== 'DELETE'
    )
      return;
    const who = auth.get(request);
    if (who?.kind === 'bearer') return;
    if (!sameOrigin(request)) {
      request.log.warn(
        { path: pathOf(request), origin: request.headers.origin },
        'review: cross-origin POST refused',
      );
      return sendForbidden(request, reply, 'This request did not come from the review site.');
    }
    if (isPublic(request)) return; // the login form: there is no session to hold a CSRF token yet
    if (who?.kind !== 'session' && who?.kind !== 'proxy')
      return sendUnauthorised(request, reply, 'Sign in first.');
    const expected = who.kind === 'session' ? who.session.csrf : who.csrf;
    const given = request.headers['x-csrf-token'] ?? field(request.body as FormBody | undefined, '_csrf');
    if (!secretsMatch(expected, Array.isArray(given) ? given[0] : given)) {
      request.log.warn({ path: pathOf(request) }, 'review: POST without a valid CSRF token refused');
      return sendForbidden(
        request,
        reply,
        'This form has expired or did not come from the review site. Go back, reload the page and try again.',
      );
    }
  });

  function sendUnauthorised(request: FastifyRequest, reply: FastifyReply, message: string) {
    reply.code(401);
    if (isApi(request)) return reply.send({ error: { code: 'UNAUTHORIZED', message } });
    return reply.type('text/html; charset=utf-8').send(loginPage({ next: '/', error: message }));
  }

  /** 429 with `Retry-After`: the address tried too many wrong tokens; its token was not looked at. */
  function sendThrottled(request: FastifyRequest, reply: FastifyReply, waitMs: number, next: string) {
    const seconds = Math.ceil(waitMs / 1000);
    request.log.info(
      { path: pathOf(request), ip: request.ip, retryAfterSeconds: seconds },
      'review: sign-in refused, too many wrong tokens from this address',
    );
    reply.code(429).header('retry-after', String(seconds));
    const message = `Too many wrong tokens were tried from your address. Wait ${waitText(seconds)}, then try again.`;
    if (isApi(request)) return reply.send({ error: { code: 'TOO_MANY_ATTEMPTS', message } });
    return reply.type('text/html; charset=utf-8').send(loginPage({ next, error: message }));
  }

  /** Counts a wrong token against its address; says so in the log (never the token) when that locks it. */
  function recordFailure(request: FastifyRequest, address: string, guess: string) {
    const { counted, retryAfterMs } = throttle.recordFailure(address, guess);
    if (counted && retryAfterMs > 0)
      request.log.warn(
        {
          ip: request.ip,
          address,
          failures: throttle.maxFailures,
          retryAfterSeconds: Math.ceil(retryAfterMs / 1000),
        },
        'review: too many wrong tokens from one address; refusing its sign-ins for a while',
      );
  }

  function sendForbidden(request: FastifyRequest, reply: FastifyReply, message: string) {
    reply.code(403);
    if (isApi(request)) return reply.send({ error: { code: 'FORBIDDEN', message } });
    return reply.type('text/html; charset=utf-8').send(
      messagePage({
        title: 'Request refused',
        message,
        viewer: auth.has(request) ? viewerOf(request) : null,
      }),
    );
  }

  // ---- sign in / out -------------------------------------------------------------------------------

  app.get('/login', async (request, reply) => {
    const next = safeNext(field(request.query as FormBody, 'next'));
    if (sessions.get(parseCookies(request.headers.cookie).get(SESSION_COOKIE)))
      return reply.redirect(next, 303);
    return reply.type('text/html; charset=utf-8').send(loginPage({ next }));
  });

  app.post('/login', async (request, reply) => {
    const form = formOf(request);
    const next = safeNext(field(form, 'next'));
    const address = clientAddressOf(request, trustProxy);
    const wait = throttle.retryAfterMs(address);
    if (wait > 0) return sendThrottled(request, reply, wait, next);
    const given = field(form, 'token');
    const person = given ? await personOfAnyToken(given) : null;
    if (!person) {
      request.log.warn({ ip: request.ip }, 'review: sign-in with a wrong token');
      if (given) recordFailure(request, address, given);
      return reply
        .code(401)
        .type('text/html; charset=utf-8')
        .send(loginPage({ next, error: 'That token is not right. Check it and try again.' }));
    }
    // A fresh id on every sign-in: an id planted before sign-in (session fixation) is worth nothing.
    const previous = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
    if (previous) sessions.delete(previous);
    const session = sessions.create(person);
    reply.header(
      'set-cookie',
      serializeSessionCookie(SESSION_COOKIE, session.id, {
        maxAgeSeconds: Math.floor(Math.min(sessions.ttlMs, sessions.maxLifetimeMs) / 1000),
        secure: request.protocol === 'https',
      }),
    );
    request.log.info({ ip: request.ip, who: person.name }, 'review: signed in');
    return reply.redirect(next, 303);
  });

  app.get('/logout', async (request, reply) => {
    if (auth.get(request)?.kind !== 'session') return reply.redirect('/', 303);
    return reply.type('text/html; charset=utf-8').send(logoutPage(viewerOf(request)));
  });

  app.post('/logout', async (request, reply) => {
    const who = auth.get(request);
    if (who?.kind === 'session') sessions.delete(who.session.id);
    reply.header(
      'set-cookie',
      serializeSessionCookie(SESSION_COOKIE, '', { maxAgeSeconds: 0, secure: request.protocol === 'https' }),
    );
    return reply.redirect('/login', 303);
  });

  app.get('/favicon.ico', async (_request, reply) => reply.code(204).send());
}

/** "45 seconds", "1 minute", "15 minutes": how long to wait, rounded up. */
function waitText(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

/**
 * Where to go after signing in: a path on this site only (`/...`, never `//host` or `/\host`, which
 * browsers treat as another site).
 */
function safeNext(value: string): string {
  if (!value || value.length > 2000) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) return '/';
  return value;
}

/**
 * Same-origin check for a state-changing request: when the browser sends `Origin` (or, failing that,
 * `Referer`), its origin must be this server's own (`scheme://host[:port]` as the request reached us).
 * Requests with neither header (old browsers, curl) pass; the CSRF token still protects them.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const expected = `${request.protocol}://${request.host}`.toLowerCase();
  const origin = request.headers.origin;
  if (origin !== undefined) return origin.toLowerCase() === expected;
  const referer = request.headers.referer;
  if (referer !== undefined) {
    try {
      return new URL(referer).origin.toLowerCase() === expected;
    } catch {
      return false;
    }
  }
  return true;
}
