/**
 * The discrepancy pages for people: the list with its bulk action, a discrepancy's page with its review and
 * approval forms, the XLSX and CSV exports and the report (the JSON API is registerDiscrepancyApi.ts). By the
 * time a handler runs, `registerAuth.ts` has authenticated the request and checked its origin and CSRF token.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDiscrepancyId } from '../discrepancies/discrepancyIds.js';
import {
  type ApprovableAction,
  decideProposal,
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
import { writeDiscrepanciesXlsx } from '../discrepancies/xlsx/writeDiscrepanciesXlsx.js';
import { detailPage } from './detailPage.js';
import { type FormBody, field, fieldList, formOf } from './httpParsing.js';
import { listPage } from './listPage.js';
import { messagePage } from './messagePage.js';
import { partnersWithDiscrepancies } from './partnersWithDiscrepancies.js';
import type { ReviewContext } from './reviewContext.js';
import {
  decider,
  fourEyesRefusal,
  needsSecondResolverFor,
  PAST,
  type Refusal,
  refusalOf,
  reviewInput,
  seenMoneyOf,
} from './reviewDecision.js';
import { pageOf, parseFilter } from './reviewFilter.js';

/** The media type of an XLSX workbook (ECMA-376 Part 2, Annex; IANA). */
const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** An export's file name: `discrepancies-20261201-1843.csv`, in UTC to the minute. */
function exportFileName(extension: string): string {
  const stamp = new Date().toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
  return `discrepancies-${stamp}.${extension}`;
}

/**
 * Registers the discrepancy pages (`/`, `/bulk`, `/discrepancies/...`, `/export.xlsx`, `/export.csv`,
 * `/report`).
 */
export function registerDiscrepancyRoutes(app: FastifyInstance, ctx: ReviewContext): void {
  const { pool, viewerOf, takeFlash, setFlash, notFoundPage } = ctx;

  const deciderOf = (request: FastifyRequest) => decider(ctx, request);
  const needsSecondResolver = (id: string, action: string) => needsSecondResolverFor(ctx, id, action);

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
        next: list.next,
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
      const { changed } = await reviewDiscrepancies(pool, ids, action, {
        ...input,
        approvalThreshold: ctx.approvalThreshold,
      });
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
    // What the page showed when the person chose: a proposal is about that amount, not one grown since.
    const shown = seenMoneyOf(form.seenAmount, form.seenCurrency);
    if ('refusal' in shown) return refuse(shown.refusal);
    try {
      if (await needsSecondResolver(id, action)) {
        const nobody = fourEyesRefusal(ctx, request);
        if (nobody) return refuse(nobody);
        await propose(pool, id, action as ApprovableAction, { ...input, seen: shown.seen });
        request.log.info({ action, id, by: input.by }, 'review: proposal (four eyes)');
        setFlash(request, {
          kind: 'ok',
          text: `Proposed by ${input.by}: the amount is above the approval threshold, so a second resolver must approve it.`,
        });
        return reply.redirect(`/discrepancies/${id}`, 303);
      }
      await reviewDiscrepancies(pool, [id], action, { ...input, approvalThreshold: ctx.approvalThreshold });
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
    const nobody = fourEyesRefusal(ctx, request);
    if (nobody) return refuse(nobody);
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
    if (parsed.errors.length) return badExportFilter(reply, parsed.errors);
    // `?separator=semicolon` for spreadsheets in comma-decimal locales; the same guarantees either way.
    const separator = field(request.query as FormBody, 'separator') || 'comma';
    if (!isCsvSeparator(separator))
      return reply.code(400).type('text/plain; charset=utf-8').send('separator must be comma or semicolon\n');
    return sendExport(request, reply, {
      type: 'text/csv; charset=utf-8',
      extension: 'csv',
      write: (out) => writeDiscrepanciesCsv(streamDiscrepancies(pool, parsed.filter), out, { separator }),
    });
  });

  // The export for people opening it in a spreadsheet: typed cells, same filter and guarantees as the CSV.
  app.get('/export.xlsx', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody);
    if (parsed.errors.length) return badExportFilter(reply, parsed.errors);
    // A failure midway (a cell over Excel's limit, the database) cuts the download before the ZIP's central
    // directory: the browser or the spreadsheet reports a broken file, never a short one taken for whole.
    return sendExport(request, reply, {
      type: XLSX_TYPE,
      extension: 'xlsx',
      write: (out) => writeDiscrepanciesXlsx(streamDiscrepancies(pool, parsed.filter), out),
    });
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
}

/** An export's filter it cannot apply: plain text, since the answer is a download, not a page. */
function badExportFilter(reply: FastifyReply, errors: string[]) {
  return reply
    .code(400)
    .type('text/plain; charset=utf-8')
    .send(`bad filter: ${errors.join('; ')}\n`);
}

/**
 * Streams an export as an attachment while `write` produces it. A failure midway destroys the stream, so
 * the download is cut (the client sees a broken transfer), never ended as if it were whole.
 */
function sendExport(
  request: FastifyRequest,
  reply: FastifyReply,
  format: { type: string; extension: 'csv' | 'xlsx'; write: (out: PassThrough) => Promise<unknown> },
) {
  const out = new PassThrough();
  format.write(out).catch((error: unknown) => {
    request.log.error({ err: error }, `review: ${format.extension.toUpperCase()} export failed midway`);
    out.destroy(error instanceof Error ? error : new Error(String(error)));
  });
  return reply
    .type(format.type)
    .header('content-disposition', `attachment; filename="${exportFileName(format.extension)}"`)
    .send(out);
}

/** The list's query string kept by the bulk form, rebuilt through URLSearchParams (never a raw URL). */
function listQuery(value: string): string {
  const params = new URLSearchParams(value.startsWith('?') ? value.slice(1) : value);
  const text = params.toString();
  return text ? `?${text}` : '';
}
