import { PassThrough } from 'node:stream';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Pool } from 'pg';
import { discrepancyJson } from '../discrepancies/discrepanciesJson.js';
import { isDiscrepancyId } from '../discrepancies/discrepancyIds.js';
import type { DiscrepancyDetail, ReviewAction } from '../discrepancies/discrepancyTypes.js';
import { getDiscrepancy } from '../discrepancies/getDiscrepancy.js';
import { listDiscrepancies } from '../discrepancies/listDiscrepancies.js';
import { renderHtmlReport } from '../discrepancies/renderHtmlReport.js';
import { reportData } from '../discrepancies/reportData.js';
import { reviewDiscrepancies } from '../discrepancies/reviewDiscrepancies.js';
import { streamDiscrepancies } from '../discrepancies/streamDiscrepancies.js';
import { isReviewAction } from '../discrepancies/transitions.js';
import { writeDiscrepanciesCsv } from '../discrepancies/writeDiscrepanciesCsv.js';
import {
  type FormBody,
  field,
  fieldList,
  parseCookies,
  parseForm,
  serializeSessionCookie,
} from './httpParsing.js';
import { partnersWithDiscrepancies } from './partnersWithDiscrepancies.js';
import { pageOf, parseFilter } from './reviewFilter.js';
import { type ReviewSession, SessionStore, secretsMatch } from './sessions.js';
import {
  detailPage,
  type Flash,
  listPage,
  loginPage,
  logoutPage,
  messagePage,
  type Viewer,
} from './views.js';

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

/** The session cookie's name; its value is a random id that means something only to this process. */
export const SESSION_COOKIE = 'il_review_session';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

const NOTE_MAX = 4000;
const NAME_MAX = 100;
const FORM_BODY_LIMIT = 256 * 1024;

/** Who made a request: a script with the bearer token, or a person with a session. */
type Auth = { kind: 'bearer' } | { kind: 'session'; session: ReviewSession };

/** A review refused by the workflow or by its input, with the HTTP status it maps to. */
interface Refusal {
  status: number;
  code: string;
  message: string;
}

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
  const auth = new WeakMap<FastifyRequest, Auth>();

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

  app.addHook('onSend', async (_request, reply, payload) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    return payload;
  });

  const isApi = (request: FastifyRequest) => request.url.startsWith('/api/');
  // By matched route, not by raw URL: only the sign-in form and the icon are open to everyone.
  const isPublic = (request: FastifyRequest) => {
    const route = request.routeOptions.url;
    return route === '/login' || route === '/favicon.ico';
  };

  // 1. Authentication: bearer token (scripts) or session cookie (people); nothing else gets in.
  app.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) return;
    const header = request.headers.authorization;
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (match && secretsMatch(token, match[1])) {
        auth.set(request, { kind: 'bearer' });
        return;
      }
      request.log.warn({ url: request.url, ip: request.ip }, 'review: wrong bearer token');
      reply.header('www-authenticate', 'Bearer error="invalid_token"');
      return sendUnauthorised(request, reply, 'The bearer token is not valid.');
    }
    const session = sessions.get(parseCookies(request.headers.cookie).get(SESSION_COOKIE));
    if (session) {
      auth.set(request, { kind: 'session', session });
      return;
    }
    if ((request.method === 'GET' || request.method === 'HEAD') && !isApi(request)) {
      return reply.redirect(`/login?next=${encodeURIComponent(request.url)}`, 303);
    }
    reply.header('www-authenticate', 'Bearer');
    return sendUnauthorised(request, reply, 'Sign in first.');
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
        { url: request.url, origin: request.headers.origin },
        'review: cross-origin POST refused',
      );
      return sendForbidden(request, reply, 'This request did not come from the review site.');
    }
    if (isPublic(request)) return; // the login form: there is no session to hold a CSRF token yet
    if (who?.kind !== 'session') return sendUnauthorised(request, reply, 'Sign in first.');
    const given = request.headers['x-csrf-token'] ?? field(request.body as FormBody | undefined, '_csrf');
    if (!secretsMatch(who.session.csrf, Array.isArray(given) ? given[0] : given)) {
      request.log.warn({ url: request.url }, 'review: POST without a valid CSRF token refused');
      return sendForbidden(
        request,
        reply,
        'This form has expired or did not come from the review site. Go back, reload the page and try again.',
      );
    }
  });

  function viewerOf(request: FastifyRequest): Viewer {
    const who = auth.get(request);
    if (who?.kind === 'session') return { csrf: who.session.csrf, name: who.session.name, session: true };
    return { csrf: null, name: null, session: false };
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

  function rememberName(request: FastifyRequest, name: string): void {
    const who = auth.get(request);
    if (who?.kind === 'session' && name) who.session.name = name;
  }

  function sendUnauthorised(request: FastifyRequest, reply: FastifyReply, message: string) {
    reply.code(401);
    if (isApi(request)) return reply.send({ error: { code: 'UNAUTHORIZED', message } });
    return reply.type('text/html; charset=utf-8').send(loginPage({ next: '/', error: message }));
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
    if (!secretsMatch(token, field(form, 'token'))) {
      request.log.warn({ ip: request.ip }, 'review: sign-in with a wrong token');
      return reply
        .code(401)
        .type('text/html; charset=utf-8')
        .send(loginPage({ next, error: 'That token is not right. Check it and try again.' }));
    }
    // A fresh id on every sign-in: an id planted before sign-in (session fixation) is worth nothing.
    const previous = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
    if (previous) sessions.delete(previous);
    const session = sessions.create();
    reply.header(
      'set-cookie',
      serializeSessionCookie(SESSION_COOKIE, session.id, {
        maxAgeSeconds: sessions.ttlMs / 1000,
        secure: request.protocol === 'https',
      }),
    );
    request.log.info({ ip: request.ip }, 'review: signed in');
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

  // ---- pages ---------------------------------------------------------------------------------------

  app.get('/', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody);
    const [list, partners, numbers] = await Promise.all([
      listDiscrepancies(pool, pageOf(parsed)),
      partnersWithDiscrepancies(pool),
      reportData(pool, parsed.filter, { tableLimit: 0 }),
    ]);
    return reply.type('text/html; charset=utf-8').send(
      listPage({
        viewer: viewerOf(request),
        parsed,
        rows: list.rows,
        total: list.total,
        partners,
        overview: { statusCounts: numbers.statusCounts, openByCurrency: numbers.open.byCurrency },
        flash: takeFlash(request),
      }),
    );
  });

  app.post('/bulk', async (request, reply) => {
    const form = formOf(request);
    const back = `/${listQuery(field(form, 'return'))}`;
    const action = field(form, 'action');
    const ids = fieldList(form, 'ids');
    if (action !== 'acknowledge' && action !== 'resolve') {
      setFlash(request, { kind: 'error', text: 'Choose Acknowledge or Resolve.' });
      return reply.redirect(back, 303);
    }
    if (ids.length === 0) {
      setFlash(request, { kind: 'error', text: `Select at least one discrepancy to ${action}.` });
      return reply.redirect(back, 303);
    }
    const input = reviewInput(form);
    if ('refusal' in input) {
      setFlash(request, { kind: 'error', text: input.refusal.message });
      return reply.redirect(back, 303);
    }
    try {
      const { changed } = await reviewDiscrepancies(pool, ids, action, input);
      rememberName(request, input.by);
      request.log.info({ action, ids: changed, by: input.by }, 'review: bulk change');
      setFlash(request, {
        kind: 'ok',
        text: `${action === 'resolve' ? 'Resolved' : 'Acknowledged'} ${changed.length} ${changed.length === 1 ? 'discrepancy' : 'discrepancies'}: ${changed.map((id) => `#${id}`).join(', ')}.`,
      });
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      setFlash(request, { kind: 'error', text: `Nothing was changed. ${refusal.message}` });
    }
    return reply.redirect(back, 303);
  });

  app.get<{ Params: { id: string } }>('/discrepancies/:id', async (request, reply) => {
    const detail = isDiscrepancyId(request.params.id) ? await getDiscrepancy(pool, request.params.id) : null;
    if (!detail) return notFoundPage(request, reply);
    return reply
      .type('text/html; charset=utf-8')
      .send(detailPage({ viewer: viewerOf(request), detail, flash: takeFlash(request) }));
  });

  app.post<{ Params: { id: string } }>('/discrepancies/:id/review', async (request, reply) => {
    const { id } = request.params;
    const form = formOf(request);
    const action = field(form, 'action');
    const typed = { note: field(form, 'note'), by: field(form, 'by'), assignee: field(form, 'assignee') };
    const refuse = async (refusal: Refusal) => {
      const detail = await getDiscrepancy(pool, id);
      if (!detail) return notFoundPage(request, reply);
      return reply
        .code(refusal.status)
        .type('text/html; charset=utf-8')
        .send(
          detailPage({
            viewer: viewerOf(request),
            detail,
            flash: { kind: 'error', text: `Nothing was changed. ${refusal.message}` },
            form: typed,
          }),
        );
    };
    if (!isDiscrepancyId(id)) return notFoundPage(request, reply);
    if (!isReviewAction(action))
      return refuse({ status: 400, code: 'BAD_ACTION', message: 'Choose acknowledge, resolve or dismiss.' });
    const input = reviewInput(form);
    if ('refusal' in input) return refuse(input.refusal);
    try {
      await reviewDiscrepancies(pool, [id], action, input);
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      if (refusal.code === 'DISCREPANCY_NOT_FOUND') return notFoundPage(request, reply);
      return refuse(refusal);
    }
    rememberName(request, input.by);
    request.log.info({ action, id, by: input.by }, 'review: change');
    setFlash(request, { kind: 'ok', text: `${PAST[action]} by ${input.by}.` });
    return reply.redirect(`/discrepancies/${id}`, 303);
  });

  app.get('/export.csv', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody);
    if (parsed.errors.length)
      return reply
        .code(400)
        .type('text/plain; charset=utf-8')
        .send(`bad filter: ${parsed.errors.join('; ')}\n`);
    const out = new PassThrough();
    const stamp = new Date().toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
    writeDiscrepanciesCsv(streamDiscrepancies(pool, parsed.filter), out).catch((error: unknown) => {
      request.log.error({ err: error }, 'review: CSV export failed midway');
      out.destroy(error instanceof Error ? error : new Error(String(error)));
    });
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="discrepancies-${stamp}.csv"`)
      .send(out);
  });

  app.get('/report', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody);
    if (parsed.errors.length)
      return reply
        .code(400)
        .type('text/html; charset=utf-8')
        .send(
          messagePage({ title: 'Bad filter', message: parsed.errors.join('; '), viewer: viewerOf(request) }),
        );
    const data = await reportData(pool, parsed.filter);
    return reply.type('text/html; charset=utf-8').send(renderHtmlReport(data));
  });

  // ---- JSON API for scripts ------------------------------------------------------------------------

  app.get('/api/discrepancies', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody, { api: true });
    if (parsed.errors.length)
      return reply.code(400).send({ error: { code: 'BAD_FILTER', message: parsed.errors.join('; ') } });
    const { rows, total } = await listDiscrepancies(pool, pageOf(parsed));
    return reply.send({ total, limit: parsed.limit, offset: parsed.offset, rows: rows.map(discrepancyJson) });
  });

  app.get<{ Params: { id: string } }>('/api/discrepancies/:id', async (request, reply) => {
    const detail = await getDiscrepancy(pool, request.params.id);
    if (!detail) return apiNotFound(reply, request.params.id);
    return reply.send(detailJson(detail));
  });

  app.post<{ Params: { id: string; action: string } }>(
    '/api/discrepancies/:id/:action',
    async (request, reply) => {
      const { id, action } = request.params;
      if (!isReviewAction(action))
        return reply.code(404).send({
          error: { code: 'UNKNOWN_ACTION', message: 'use acknowledge, resolve or dismiss' },
        });
      const body = request.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        return reply.code(400).send({
          error: { code: 'BAD_REQUEST', message: 'send a JSON object: { "by": "...", "note": "..." }' },
        });
      const raw = body as Record<string, unknown>;
      if (typeof raw.by !== 'string' || !raw.by.trim())
        return reply
          .code(400)
          .send({ error: { code: 'ACTOR_REQUIRED', message: '"by" (who is acting) is required' } });
      const input = reviewInput({
        note: typeof raw.note === 'string' ? raw.note : '',
        by: raw.by,
        assignee: typeof raw.assignee === 'string' ? raw.assignee : '',
      });
      if ('refusal' in input)
        return reply
          .code(input.refusal.status)
          .send({ error: { code: input.refusal.code, message: input.refusal.message } });
      try {
        const { changed } = await reviewDiscrepancies(pool, [id], action, input);
        request.log.info({ action, id, by: input.by }, 'review: change (api)');
        const detail = await getDiscrepancy(pool, id);
        return reply.send({ changed, discrepancy: detail ? detailJson(detail) : null });
      } catch (error) {
        const refusal = refusalOf(error);
        if (!refusal) throw error;
        return reply.code(refusal.status).send({ error: { code: refusal.code, message: refusal.message } });
      }
    },
  );

  // ---- errors --------------------------------------------------------------------------------------

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

  function apiNotFound(reply: FastifyReply, id: string) {
    return reply.code(404).send({
      error: {
        code: 'DISCREPANCY_NOT_FOUND',
        message: `discrepancy ${String(id).slice(0, 40)} does not exist`,
      },
    });
  }

  app.setNotFoundHandler((request, reply) => {
    if (isApi(request))
      return reply.code(404).send({ error: { code: 'NOT_FOUND', message: 'no such endpoint' } });
    return notFoundPage(request, reply);
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

const PAST: Record<ReviewAction, string> = {
  acknowledge: 'Acknowledged',
  resolve: 'Resolved',
  dismiss: 'Dismissed',
};

function formOf(request: FastifyRequest): FormBody {
  const body = request.body;
  return typeof body === 'object' && body !== null ? (body as FormBody) : {};
}

/** The note/by/assignee of a review form or API body, trimmed and bounded. */
function reviewInput(form: FormBody): { note: string; by: string; assignee?: string } | { refusal: Refusal } {
  const note = field(form, 'note').trim();
  const by = field(form, 'by').trim();
  const assignee = field(form, 'assignee').trim();
  if (note.length > NOTE_MAX)
    return {
      refusal: { status: 422, code: 'NOTE_TOO_LONG', message: `Keep the note under ${NOTE_MAX} characters.` },
    };
  if (by.length > NAME_MAX || assignee.length > NAME_MAX)
    return {
      refusal: {
        status: 422,
        code: 'NAME_TOO_LONG',
        message: `Names are limited to ${NAME_MAX} characters.`,
      },
    };
  return assignee ? { note, by, assignee } : { note, by };
}

/** Maps the workflow's errors (by their stable `code`) to what the page or API says; others are bugs. */
function refusalOf(error: unknown): Refusal | null {
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  // The workflow reports unknown ids among refused transitions; alone, they are a plain "not found".
  const refused = (error as { refused?: { reason?: string }[] })?.refused;
  if (
    code === 'DISCREPANCY_TRANSITION_NOT_ALLOWED' &&
    Array.isArray(refused) &&
    refused.length > 0 &&
    refused.every((r) => r.reason === 'DISCREPANCY_NOT_FOUND')
  )
    return { status: 404, code: 'DISCREPANCY_NOT_FOUND', message: capitalise(message) };
  switch (code) {
    case 'DISCREPANCY_NOT_FOUND':
      return { status: 404, code, message: capitalise(message) };
    case 'DISCREPANCY_TRANSITION_NOT_ALLOWED':
      return { status: 409, code, message: capitalise(message) };
    case 'NOTE_REQUIRED':
    case 'ACTOR_REQUIRED':
      return { status: 422, code, message: capitalise(message) };
    default:
      return null;
  }
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function detailJson(detail: DiscrepancyDetail) {
  return {
    ...discrepancyJson(detail),
    attempt: detail.attempt,
    details: detail.details,
    intent: detail.intent,
    partnerRecords: detail.partnerRecords,
    run: detail.run,
    history: detail.history,
  };
}

/**
 * Where to go after signing in: a path on this site only (`/...`, never `//host` or `/\host`, which
 * browsers treat as another site).
 */
export function safeNext(value: string): string {
  if (!value || value.length > 2000) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) return '/';
  return value;
}

/** The list's query string kept by the bulk form, rebuilt through URLSearchParams (never a raw URL). */
function listQuery(value: string): string {
  const params = new URLSearchParams(value.startsWith('?') ? value.slice(1) : value);
  const text = params.toString();
  return text ? `?${text}` : '';
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
