/**
 * The JSON API for scripts: the list, one discrepancy, and a review action (`/api/discrepancies...`). A
 * person's own token records the person; the shared REVIEW_TOKEN records a script's `by`.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { discrepancyJson } from '../discrepancies/discrepanciesJson.js';
import { isDiscrepancyId } from '../discrepancies/discrepancyIds.js';
import type { DiscrepancyDetail } from '../discrepancies/discrepancyTypes.js';
import { type ApprovableAction, pendingProposal, propose } from '../discrepancies/fourEyes.js';
import { getDiscrepancy } from '../discrepancies/getDiscrepancy.js';
import { listDiscrepancies } from '../discrepancies/listDiscrepancies.js';
import { reviewDiscrepancies } from '../discrepancies/reviewDiscrepancies.js';
import { isReviewAction } from '../discrepancies/transitions.js';
import type { FormBody } from './httpParsing.js';
import { personOf, type ReviewContext } from './reviewContext.js';
import {
  decider,
  fourEyesRefusal,
  needsSecondResolverFor,
  refusalOf,
  reviewInput,
  seenMoneyOf,
} from './reviewDecision.js';
import { pageOf, parseFilter } from './reviewFilter.js';

/** Registers `/api/discrepancies`, `/api/discrepancies/:id` and `/api/discrepancies/:id/:action`. */
export function registerDiscrepancyApi(app: FastifyInstance, ctx: ReviewContext): void {
  const { pool } = ctx;
  const deciderOf = (request: Parameters<typeof decider>[1]) => decider(ctx, request);
  const needsSecondResolver = (id: string, action: string) => needsSecondResolverFor(ctx, id, action);

  app.get('/api/discrepancies', async (request, reply) => {
    const parsed = parseFilter(request.query as FormBody, { api: true });
    if (parsed.errors.length)
      return reply.code(400).send({ error: { code: 'BAD_FILTER', message: parsed.errors.join('; ') } });
    const { rows, total, next } = await listDiscrepancies(pool, pageOf(parsed));
    // `next` on every page, offset ones too: a script paging by offset can switch to the exact cursor.
    const position = parsed.after === null ? { offset: parsed.offset } : { after: parsed.after };
    return reply.send({ total, limit: parsed.limit, ...position, next, rows: rows.map(discrepancyJson) });
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
      // Optional: the amount and currency the script read before deciding; a proposal is then refused when
      // the discrepancy no longer has them (PROPOSAL_STALE).
      const shown = seenMoneyOf(raw.amountAtRisk, raw.currency);
      if ('refusal' in shown)
        return reply
          .code(shown.refusal.status)
          .send({ error: { code: shown.refusal.code, message: shown.refusal.message } });
      try {
        if (isDiscrepancyId(id) && (await needsSecondResolver(id, action))) {
          const nobody = fourEyesRefusal(ctx, request);
          if (nobody)
            return reply.code(nobody.status).send({ error: { code: nobody.code, message: nobody.message } });
          await propose(pool, id, action as ApprovableAction, { ...input, seen: shown.seen });
          request.log.info({ action, id, by: input.by }, 'review: proposal (four eyes, api)');
          return reply.code(202).send({ changed: [], awaitingApproval: await pendingProposal(pool, id) });
        }
        const { changed } = await reviewDiscrepancies(pool, [id], action, {
          ...input,
          approvalThreshold: ctx.approvalThreshold,
        });
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
