/**
 * What the review pages and the API share about a decision: who it is recorded under, whether it needs a
 * second resolver, the typed note and assignee checked, and the workflow's refusals as HTTP answers.
 */
import type { FastifyRequest } from 'fastify';
import type { ReviewAction } from '../discrepancies/discrepancyTypes.js';
import { aboveThreshold, needsApprovalFor, type SeenMoney } from '../discrepancies/fourEyes.js';
import { type FormBody, field } from './httpParsing.js';
import { personOf, type ReviewContext } from './reviewContext.js';

const NOTE_MAX = 4000;
const NAME_MAX = 100;

/** A review refused by the workflow or by its input, with the HTTP status it maps to. */
export interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** Who the history records for a decision: the authenticated person, never a typed name. */
export function decider(ctx: ReviewContext, request: FastifyRequest): string {
  const who = ctx.auth.get(request);
  if (!who) throw new Error('review: a decision without an authenticated person');
  return personOf(who).name;
}

/**
 * Four eyes counts people: a proposal or an approval above the threshold needs someone signed in with their
 * own credential (a personal token, or named by the proxy). `REVIEW_TOKEN` is shared, as a typed `--by` on
 * the CLI is typed: with both eyes allowed to it, one holder proposed as a "script" and approved as
 * "review-token admin", or approved their own proposal made under their name. Null when `request` may.
 */
export function fourEyesRefusal(ctx: ReviewContext, request: FastifyRequest): Refusal | null {
  const who = ctx.auth.get(request);
  if (who && personOf(who).via !== 'review-token') return null;
  return {
    status: 403,
    code: 'PERSON_REQUIRED',
    message:
      'This discrepancy is above the approval threshold: proposing, approving or rejecting it needs a person, and the shared review token is nobody in particular. Sign in with your own token.',
  };
}

/**
 * Four eyes: resolving or dismissing above the ledger's threshold for the currency (or this site's lower
 * `approvalThreshold`) is a proposal a second resolver approves.
 */
export async function needsSecondResolverFor(
  ctx: ReviewContext,
  id: string,
  action: string,
): Promise<boolean> {
  return needsApprovalFor(action) && (await aboveThreshold(ctx.pool, id, ctx.approvalThreshold));
}

/** What a page's confirmation says was done. */
export const PAST: Record<ReviewAction, string> = {
  acknowledge: 'Acknowledged',
  resolve: 'Resolved',
  dismiss: 'Dismissed',
};

/** The note/assignee of a review form or API body, trimmed and bounded, with who decided. */
export function reviewInput(
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
export function refusalOf(error: unknown): Refusal | null {
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
    case 'PROPOSAL_STALE':
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

/**
 * What the person deciding was shown: `seenAmount` and `seenCurrency` (the detail page's hidden fields; an
 * API body's `amountAtRisk` and `currency`). Absent: undefined (not compared). Present but not a plain
 * decimal and a 3-letter code (or empty, for none): a refusal, never a value guessed.
 */
export function seenMoneyOf(
  amount: unknown,
  currency: unknown,
): { seen: SeenMoney | undefined } | { refusal: Refusal } {
  if (amount === undefined && currency === undefined) return { seen: undefined };
  const amountText = typeof amount === 'string' ? amount.trim() : null;
  const currencyText = typeof currency === 'string' ? currency.trim() : null;
  if (
    amountText === null ||
    currencyText === null ||
    !(amountText === '' || /^-?\d{1,30}(\.\d{1,20})?$/.test(amountText)) ||
    !(currencyText === '' || /^[A-Z]{3}$/.test(currencyText))
  )
    return {
      refusal: {
        status: 400,
        code: 'BAD_REQUEST',
        message: 'The amount and currency shown must be a decimal (or empty) and a 3-letter code (or empty).',
      },
    };
  return { seen: { amountAtRisk: amountText || null, currency: currencyText || null } };
}
