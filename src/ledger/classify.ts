import type { RejectionReason } from '../shared/errors/IntentRejectedError.js';
import { PartnerNotExecuted } from '../shared/errors/PartnerNotExecuted.js';
import { PartnerRejected } from '../shared/errors/PartnerRejected.js';

/** What a failed partner call means for the intent. */
export type Classification =
  | { outcome: 'rejected'; reason: RejectionReason }
  | { outcome: 'not_executed'; detail: string }
  | { outcome: 'unknown'; detail: string };

/** Decides what a callback's error means. Must be conservative: when in doubt, `unknown`. */
export type Classifier = (error: unknown) => Classification;

/**
 * Network error codes that prove the request never left this machine or never reached the partner's
 * application: the connection was never established. Anything after the connection opened (reset,
 * timeout, socket hang up) may have executed.
 */
const NEVER_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_INVALID_URL',
]);

/**
 * The default classifier. Understands {@link PartnerRejected} / {@link PartnerNotExecuted}, axios errors
 * and Node/undici network errors:
 * - refused or unresolvable before anything was sent -> not executed
 * - HTTP 429 -> not executed (the partner says it did nothing and wants a later retry)
 * - other 4xx except 408 -> rejected
 * - 408, 5xx, timeouts, resets, aborts, anything unrecognised -> unknown
 */
export const defaultClassify: Classifier = (error) => {
  if (error instanceof PartnerRejected) {
    return {
      outcome: 'rejected',
      reason: compact({ message: error.message, code: error.partnerCode, details: error.details }),
    };
  }
  if (error instanceof PartnerNotExecuted) return { outcome: 'not_executed', detail: error.message };

  const status = httpStatusOf(error);
  if (status !== undefined) {
    if (status === 429)
      return { outcome: 'not_executed', detail: 'partner answered HTTP 429 (rate limited)' };
    if (status === 408) return { outcome: 'unknown', detail: 'partner answered HTTP 408 (request timeout)' };
    if (status >= 400 && status < 500) {
      return { outcome: 'rejected', reason: { message: `partner answered HTTP ${status}`, status } };
    }
    return { outcome: 'unknown', detail: `partner answered HTTP ${status}` };
  }
  const code = networkCodeOf(error);
  if (code !== undefined && NEVER_SENT_CODES.has(code)) {
    return { outcome: 'not_executed', detail: `connection never established (${code})` };
  }
  return { outcome: 'unknown', detail: code ? `network error ${code}` : describeUnknown(error) };
};

function httpStatusOf(error: unknown): number | undefined {
  if (!isObject(error)) return undefined;
  const response = error.response;
  if (isObject(response) && typeof response.status === 'number') return response.status;
  return undefined;
}

/** Node errors carry `code`; fetch (undici) wraps them in `cause`. */
function networkCodeOf(error: unknown): string | undefined {
  for (
    let current: unknown = error, depth = 0;
    isObject(current) && depth < 4;
    current = current.cause, depth++
  ) {
    if (
      typeof current.code === 'string' &&
      current.code !== 'ERR_BAD_RESPONSE' &&
      current.code !== 'ERR_BAD_REQUEST'
    ) {
      return current.code;
    }
  }
  return undefined;
}

function describeUnknown(error: unknown): string {
  if (error instanceof Error)
    return error.name === 'AbortError' ? 'aborted' : `${error.name}: ${error.message}`;
  return 'unrecognised failure';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function compact(reason: RejectionReason): RejectionReason {
  return Object.fromEntries(Object.entries(reason).filter(([, v]) => v !== undefined)) as RejectionReason;
}
