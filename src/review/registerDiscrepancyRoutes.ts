/**
 * The discrepancy routes: pages for people (the list with its bulk action, a discrepancy's page and its
 * review form, the CSV export, the report) and the JSON API for scripts (list, one, review action). By the
 * time a handler runs, `registerAuth.ts` has authenticated the request and checked its origin and CSRF token.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { discrepancyJson } from '../discrepancies/discrepanciesJson.js';
import { isDiscrepancyId } from '../discrepancies/discrepancyIds.js';
import type { DiscrepancyDetail, ReviewAction } from '../discrepancies/discrepancyTypes.js';
import {
  type ApprovableAction,
  aboveThreshold,
  decideProposal,
  needsApprovalFor,
  pendingProposal,
  propose,
} from '../discrepancies/fourEyes.js';
import { getDiscrepancy } from '../discrepancies/getDiscrepancy.js';
import { listDiscrepancies } from '../discrepancies/listDiscrepancies.js';
import { renderHtmlSummary } from '../discrepancies/renderHtmlSummary.js';
import { reviewDiscrepancies } from '../discrepancies/reviewDiscrepancies.js';
import { streamDiscrepancies } from '../discrepancies/streamDiscrepancies.js';
import { summaryData } from '../discrepancies/summaryData.js';
import { isReviewAction } from '../discrepancies/transitions.js';
import { isCsvSeparator, writeDiscrepanciesCsv } from '../discrepancies/writeDiscrepanciesCsv.js';
import { detailPage } from './detailPage.js';
import { type FormBody, field, fieldList, formOf } from './httpParsing.js';
import { listPage } from './listPage.js';
import { messagePage } from './messagePage.js';
import { partnersWithDiscrepancies } from './partnersWithDiscrepancies.js';
import { personOf, type ReviewContext } from './reviewContext.js';
import { pageOf, parseFilter } from './reviewFilter.js';

const NOTE_MAX = 4000;
const NAME_MAX = 100;

/** A review refused by the workflow or by its input, with the HTTP status it maps to. */
interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** Registers the discrepancy pages (`/`, `/bulk`, `/discrepancies/...`, `/export.csv`, `/report`) and `/api/`. */
export function registerDiscrepancyRoutes(app: FastifyInstance, ctx: ReviewContext): void {
  const { pool, viewerOf, takeFlash, setFlash, notFoundPage } = ctx;

  /** Who the history records for a page's decision: the authenticated person, never a typed name. */
  const deciderOf = (request: FastifyRequest): string => {
    const who = ctx.auth.get(request);
    if (!who) throw new Error('review: a decision without an authenticated person');
    return personOf(who).name;
  };

  /**
   * Four eyes: resolving or dismissing above the ledger's threshold for the currency (or this site's lower
   * `approvalThreshold`) is a proposal a second resolver approves.
   */
  const needsSecondResolver = async (id: string, action: string): Promise<boolean> =>
    needsApprovalFor(action) && (await aboveThreshold(pool, id, ctx.approvalThreshold));

  /** The discrepancy's page again, with why nothing was changed and what the person had typed. */
  const refusedDetailPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    refusal: Refusal,
    typed?: { note: string; assignee: string },
  ) => {
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
          proposal: await pendingProposal(pool, detail.id),
        }),
      );
  };

  // ---- pages ---------------------------------------------------------------------------------------

  app.get('/', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody);
    const [list, partners, numbers] = await Promise.all([
      listDiscrepancies(pool, pageOf(parsed)),
      partnersWithDiscrepancies(pool),
      summaryData(pool, parsed.filter, { tableLimit: 0 }),
    ]);
    return reply.type('text/html; charset=utf-8').send(
      listPage({
        viewer: viewerOf(request),
        parsed,
        rows: list.rows,
        total: list.total,
        partners,
        overview: { statusCounts: numbers.statusCounts, atRiskByCurrency: numbers.atRisk.byCurrency },
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
    const input = reviewInput(form, deciderOf(request));
    if ('refusal' in input) {
      setFlash(request, { kind: 'error', text: input.refusal.message });
      return reply.redirect(back, 303);
    }
    const big = [];
    for (const id of ids) if (await needsSecondResolver(id, action)) big.push(id);
    if (big.length) {
      setFlash(request, {
        kind: 'error',
        text: `Nothing was changed. ${big.map((id) => `#${id}`).join(', ')} ${big.length === 1 ? 'is' : 'are'} above the approval threshold: ${action} ${big.length === 1 ? 'it' : 'them'} from ${big.length === 1 ? 'its' : 'their'} page, where a second resolver approves.`,
      });
      return reply.redirect(back, 303);
    }
    try {
      const { changed } = await reviewDiscrepancies(pool, ids, action, input);
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
    return reply.type('text/html; charset=utf-8').send(
      detailPage({
        viewer: viewerOf(request),
        detail,
        flash: takeFlash(request),
        proposal: await pendingProposal(pool, detail.id),
      }),
    );
  });

  app.post<{ Params: { id: string } }>('/discrepancies/:id/review', async (request, reply) => {
    const { id } = request.params;
    const form = formOf(request);
    const action = field(form, 'action');
    const typed = { note: field(form, 'note'), assignee: field(form, 'assignee') };
    const refuse = (refusal: Refusal) => refusedDetailPage(request, reply, id, refusal, typed);
    if (!isDiscrepancyId(id)) return notFoundPage(request, reply);
    if (!isReviewAction(action))
      return refuse({ status: 400, code: 'BAD_ACTION', message: 'Choose acknowledge, resolve or dismiss.' });
    const input = reviewInput(form, deciderOf(request));
    if ('refusal' in input) return refuse(input.refusal);
    try {
      if (await needsSecondResolver(id, action)) {
        await propose(pool, id, action as ApprovableAction, input);
        request.log.info({ action, id, by: input.by }, 'review: proposal (four eyes)');
        setFlash(request, {
          kind: 'ok',
          text: `Proposed by ${input.by}: the amount is above the approval threshold, so a second resolver must approve it.`,
        });
        return reply.redirect(`/discrepancies/${id}`, 303);
      }
      await reviewDiscrepancies(pool, [id], action, input);
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      if (refusal.code === 'DISCREPANCY_NOT_FOUND') return notFoundPage(request, reply);
      return refuse(refusal);
    }
    request.log.info({ action, id, by: input.by }, 'review: change');
    setFlash(request, { kind: 'ok', text: `${PAST[action]} by ${input.by}.` });
    return reply.redirect(`/discrepancies/${id}`, 303);
  });

  app.post<{ Params: { id: string } }>('/discrepancies/:id/approval', async (request, reply) => {
    const { id } = request.params;
    if (!isDiscrepancyId(id)) return notFoundPage(request, reply);
    const form = formOf(request);
    const decision = field(form, 'decision');
    const input = reviewInput(form, deciderOf(request));
    const refuse = (refusal: Refusal) => refusedDetailPage(request, reply, id, refusal);
    if (decision !== 'approve' && decision !== 'reject')
      return refuse({ status: 400, code: 'BAD_ACTION', message: 'Choose approve or reject.' });
    if ('refusal' in input) return refuse(input.refusal);
    try {
      const action = await decideProposal(pool, id, decision, input);
      request.log.info({ decision, action, id, by: input.by }, 'review: proposal decided (four eyes)');
      setFlash(request, {
        kind: 'ok',
        text:
          decision === 'approve'
            ? `${PAST[action]}: approved by ${input.by}.`
            : `Proposal to ${action} rejected by ${input.by}.`,
      });
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      if (refusal.code === 'NOT_FOUND') return notFoundPage(request, reply);
      return refuse(refusal);
    }
    return reply.redirect(`/discrepancies/${id}`, 303);
  });

  app.get('/export.csv', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody);
    if (parsed.errors.length)
      return reply
        .code(400)
        .type('text/plain; charset=utf-8')
        .send(`bad filter: ${parsed.errors.join('; ')}\n`);
    // `?separator=semicolon` for spreadsheets in comma-decimal locales; the same guarantees either way.
    const separator = field(request.query as FormBody, 'separator') || 'comma';
    if (!isCsvSeparator(separator))
      return reply.code(400).type('text/plain; charset=utf-8').send('separator must be comma or semicolon\n');
    const out = new PassThrough();
    const stamp = new Date().toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
    writeDiscrepanciesCsv(streamDiscrepancies(pool, parsed.filter), out, { separator }).catch(
      (error: unknown) => {
        request.log.error({ err: error }, 'review: CSV export failed midway');
        out.destroy(error instanceof Error ? error : new Error(String(error)));
      },
    );
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
    const data = await summaryData(pool, parsed.filter);
    return reply.type('text/html; charset=utf-8').send(renderHtmlSummary(data));
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
      // A person's own token records the person. REVIEW_TOKEN is shared by scripts: their "by" is required
      // and recorded as a script's, never as a person who signed in.
      const who = ctx.auth.get(request);
      const person = who ? personOf(who) : null;
      const shared = person?.via === 'review-token' && who?.kind === 'bearer';
      if (shared && (typeof raw.by !== 'string' || !raw.by.trim()))
        return reply
          .code(400)
          .send({ error: { code: 'ACTOR_REQUIRED', message: '"by" (who is acting) is required' } });
      const by = shared ? `script:${String(raw.by).trim()} (review token)` : deciderOf(request);
      const input = reviewInput(
        {
          note: typeof raw.note === 'string' ? raw.note : '',
          assignee: typeof raw.assignee === 'string' ? raw.assignee : '',
        },
        by,
      );
      if ('refusal' in input)
        return reply
          .code(input.refusal.status)
          .send({ error: { code: input.refusal.code, message: input.refusal.message } });
      try {
        if (isDiscrepancyId(id) && (await needsSecondResolver(id, action))) {
          await propose(pool, id, action as ApprovableAction, input);
          request.log.info({ action, id, by: input.by }, 'review: proposal (four eyes, api)');
          return reply.code(202).send({ changed: [], awaitingApproval: await pendingProposal(pool, id) });
        }
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
}

function apiNotFound(reply: FastifyReply, id: string) {
  return reply.code(404).send({
    error: {
      code: 'DISCREPANCY_NOT_FOUND',
      message: `discrepancy ${String(id).slice(0, 40)} does not exist`,
    },
  });
}

const PAST: Record<ReviewAction, string> = {
  acknowledge: 'Acknowledged',
  resolve: 'Resolved',
  dismiss: 'Dismissed',
};

/** The note/assignee of a review form or API body, trimmed and bounded, with who decided. */
function reviewInput(
  form: FormBody,
  decider: string,
): { note: string; by: string; assignee?: string } | { refusal: Refusal } {
  const note = field(form, 'note').trim();
  const by = decider.trim();
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
    case 'PROPOSAL_PENDING':
    case 'NO_PROPOSAL':
    case 'OWN_PROPOSAL':
    case 'TRANSITION_NOT_ALLOWED':
      return { status: 409, code, message: capitalise(message) };
    case 'NOT_FOUND':
      return { status: 404, code: 'DISCREPANCY_NOT_FOUND', message: capitalise(message) };
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
    reversals: detail.reversals,
    run: detail.run,
    history: detail.history,
  };
}

/** The list's query string kept by the bulk form, rebuilt through URLSearchParams (never a raw URL). */
function listQuery(value: string): string {
  const params = new URLSearchParams(value.startsWith('?') ? value.slice(1) : value);
  const text = params.toString();
  return text ? `?${text}` : '';
}
