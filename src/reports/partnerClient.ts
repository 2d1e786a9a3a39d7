import type { Readable } from 'node:stream';
import axios from 'axios';
import type { ResolvedApiSourceConfig } from './apiSourceConfig.js';
import { apiSourceConfigProblems } from './apiSourceConfigProblems.js';
import { PartnerApiError, withoutQuery } from './errors/PartnerApiError.js';
import { type JsonValue, parseJsonKeepingNumbers } from './parseJsonKeepingNumbers.js';
import type { ApiReadOptions } from './readApiReport.js';
import { readCappedBody } from './readCappedBody.js';
import { redactSecrets } from './redactSecrets.js';
import { redirectTarget } from './redirectTarget.js';
import { requestHeaders } from './requestHeaders.js';
import {
  errorCode,
  isRetryableNetworkCode,
  isRetryableStatus,
  type RetryableFailure,
} from './retryableFailure.js';
import { parseRetryAfter, retryDelayMs, sleep } from './retryWait.js';

// HTTP: one GET with timeouts, retries and errors that never carry the token

export interface PartnerClient {
  /** GETs `url` and parses the JSON answer, retrying as configured; throws PartnerApiError. */
  /** `link` is the answer's `Link` header (RFC 8288), when it has one. */
  getJson(
    url: URL,
    where: string,
  ): Promise<{ body: JsonValue; text: string; attempts: number; link?: string }>;
  /**
   * Like `getJson`, except that a 404 with a JSON body or none answers `{ notFound: true, body }` (body
   * undefined when there was none) instead of failing; whether it means "no such reference" is the
   * caller's to decide (lookupByReference, noSuchReference.ts).
   */
  getJsonOrNotFound(
    url: URL,
    where: string,
  ): Promise<
    | { body: JsonValue; text: string; attempts: number }
    | { notFound: true; body: JsonValue | undefined; attempts: number }
  >;
  badBody(url: URL, what: string, attempts?: number): PartnerApiError;
  configError(what: string): PartnerApiError;
}

/** Reads the token once and returns the GET helper both readers share. */
export function createPartnerClient(config: ResolvedApiSourceConfig, options: ApiReadOptions): PartnerClient {
  const { partner, logger, signal } = options;
  const base = `${config.baseUrl}${config.path}`;
  const prefix = `partner ${partner}:`;
  const configError = (what: string) =>
    new PartnerApiError(`${prefix} ${what}`, { code: 'config', partner, url: base, attempts: 0 });

  const problems = apiSourceConfigProblems(config);
  if (problems.length > 0) throw configError(problems.join('; '));
  const { headers, secrets } = requestHeaders(config, options.env ?? process.env, { partner, prefix, base });

  /**
   * Partner text quoted in messages: short, on one line, and without our secrets should it echo them back,
   * raw or JSON-escaped (redactSecrets). The whole text is redacted before any cut (`head`, then 120
   * characters once flattened): a secret the cut went through would keep its first part. Redacting a whole
   * body is a few milliseconds a megabyte, once, on the way to failing the run.
   */
  const quote = (text: string, head = Number.POSITIVE_INFINITY): string => {
    const flat = redactSecrets(text, secrets).slice(0, head).replace(/\s+/g, ' ').trim();
    return JSON.stringify(flat.length > 120 ? `${flat.slice(0, 120)}...` : flat);
  };

  const badBody = (url: URL, what: string, attempts = 1) =>
    new PartnerApiError(`${prefix} ${what}`, { code: 'bad_body', partner, url: url.href, attempts });

  const tooLarge = (url: URL, attempts: number) =>
    new PartnerApiError(
      `${prefix} answered more than ${config.maxBodyBytes} bytes in one response (maxBodyBytes): the read ` +
        'was stopped there; ask for smaller pages (pagination limit or size) or raise maxBodyBytes',
      { code: 'body_too_large', partner, url: url.href, attempts },
    );

  const aborted = (url: URL, attempts: number) =>
    new PartnerApiError(`${prefix} the read was stopped by its caller`, {
      code: 'aborted',
      partner,
      url: url.href,
      attempts,
    });

  /** One GET, tried again after a RetryableFailure up to `config.retries` times; any other failure throws. */
  async function getRaw(url: URL, where: string, notFoundIsEmpty: boolean) {
    const maxAttempts = config.retries + 1;
    let lastFailure: RetryableFailure | undefined;
    for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
      if (signal?.aborted) throw aborted(url, attempt - 1);
      const outcome = await attemptOnce(url, attempt);
      if ('failure' in outcome) {
        lastFailure = outcome.failure;
      } else {
        const { status, text, contentType, location, link } = outcome;
        if (status >= 200 && status < 300) return { status, text, contentType, link, attempts: attempt };
        if (status === 404 && notFoundIsEmpty) return { status, text, contentType, attempts: attempt };
        if (!isRetryableStatus(status)) {
          throw new PartnerApiError(`${prefix} ${explainStatus(status, where, text, location)}`, {
            code: 'http_status',
            partner,
            url: url.href,
            status,
            attempts: attempt,
          });
        }
        lastFailure = { kind: 'status', status, retryAfterMs: outcome.retryAfterMs };
      }
      if (attempt === maxAttempts) break;
      const retryAfterMs = lastFailure.kind === 'status' ? lastFailure.retryAfterMs : undefined;
      const delayMs = retryDelayMs(attempt, config.retryBaseMs, retryAfterMs);
      logger?.warn(
        {
          partner,
          url: withoutQuery(url.href),
          attempt,
          maxAttempts,
          ...(lastFailure.kind === 'status' ? { status: lastFailure.status } : {}),
          ...(lastFailure.kind === 'network' ? { code: lastFailure.code } : {}),
          ...(lastFailure.kind === 'timeout' ? { timeoutMs: config.timeoutMs } : {}),
          retryInMs: delayMs,
        },
        'partner API request failed; retrying',
      );
      if (!(await sleep(delayMs, signal))) throw aborted(url, attempt);
    }
    throw exhausted(url, where, lastFailure!, maxAttempts);
  }

  /** Why an HTTP status that no retry would change came back, and what to check. */
  function explainStatus(status: number, where: string, text: string, location: string | undefined): string {
    if ((status === 401 || status === 403) && config.auth) {
      const credentials =
        config.auth.type === 'bearer'
          ? `the token in env ${config.auth.env}`
          : `the credentials in env ${config.auth.usernameEnv} and ${config.auth.passwordEnv}`;
      return (
        `answered HTTP ${status} ${where}: check ${credentials} ` +
        `(and that it may read ${withoutQuery(base)})`
      );
    }
    if (status === 401 || status === 403) {
      return `answered HTTP ${status} ${where}: the partner wants credentials; configure auth`;
    }
    if (status >= 300 && status < 400) {
      // Redirects are not followed: a custom auth header would travel to wherever the partner points.
      return (
        `answered HTTP ${status} ${where} (a redirect to ${location ? redirectTarget(location, secrets) : 'nowhere'}): ` +
        'set baseUrl to the final address'
      );
    }
    if (status === 404) return `answered HTTP 404 ${where}: check baseUrl and path`;
    return `answered HTTP ${status} ${where}, saying ${quote(text)}: check the query parameters and the configuration`;
  }

  /** The error once every attempt has failed, from the last attempt's failure. */
  function exhausted(url: URL, where: string, failure: RetryableFailure, attempts: number): PartnerApiError {
    const details = { partner, url: url.href, attempts };
    if (failure.kind === 'timeout') {
      return new PartnerApiError(
        `${prefix} timed out after ${attempts} attempts ${where} (timeoutMs ${config.timeoutMs} each): ` +
          'the partner is slow or down; retry later or raise timeoutMs',
        { ...details, code: 'timeout' },
      );
    }
    if (failure.kind === 'network') {
      return new PartnerApiError(
        `${prefix} could not be reached (${failure.code}) after ${attempts} attempts ${where}: ` +
          'check baseUrl and whether the partner is up',
        {
          ...details,
          code: 'network',
          cause: Object.assign(new Error(failure.code), { code: failure.code }),
        },
      );
    }
    const what = failure.status === 429 ? ' (too many requests)' : '';
    return new PartnerApiError(
      `${prefix} answered HTTP ${failure.status}${what} ${where} on all ${attempts} attempts: ` +
        (failure.status === 429 ? 'lower the read frequency or raise retries' : 'retry later'),
      { ...details, code: 'http_status', status: failure.status },
    );
  }

  /** One request and its whole body, or the RetryableFailure it met; other failures throw. */
  async function attemptOnce(
    url: URL,
    attempt: number,
  ): Promise<
    | { failure: RetryableFailure }
    | {
        status: number;
        text: string;
        contentType: string;
        location?: string;
        link?: string;
        retryAfterMs?: number;
      }
  > {
    // One wall-clock budget for the whole exchange: axios' own `timeout` is a socket idle timer, which a
    // partner dribbling bytes would never trip.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, config.timeoutMs);
    const onCallerAbort = () => controller.abort();
    signal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      const bare = new URL(url);
      bare.username = '';
      bare.password = '';
      const response = await axios.request<Readable>({
        url: bare.href,
        method: 'GET',
        headers,
        // Streamed, never buffered by axios: its maxContentLength is checked only once a body has been
        // buffered whole, and a chunked answer (no content-length) would grow the worker without bound.
        responseType: 'stream',
        validateStatus: () => true,
        maxRedirects: 0,
        signal: controller.signal,
      });
      const header = (name: string) => {
        const value: unknown = response.headers[name];
        return typeof value === 'string' ? value : undefined;
      };
      const text = await readCappedBody(response.data, header('content-length'), config.maxBodyBytes, () =>
        controller.abort(),
      );
      if (text === null) throw tooLarge(url, attempt);
      return {
        status: response.status,
        text,
        contentType: header('content-type') ?? '',
        location: header('location'),
        link: header('link'),
        retryAfterMs: parseRetryAfter(header('retry-after')),
      };
    } catch (error) {
      if (error instanceof PartnerApiError) throw error;
      if (signal?.aborted) throw aborted(url, attempt);
      if (timedOut) return { failure: { kind: 'timeout' } };
      // Only the code is kept: axios errors hold the request configuration, headers and token included.
      const code = errorCode(error);
      if (isRetryableNetworkCode(code)) return { failure: { kind: 'network', code } };
      const message = error instanceof Error ? error.message : String(error);
      throw new PartnerApiError(`${prefix} request failed (${code}: ${quote(message)}): check baseUrl`, {
        code: 'network',
        partner,
        url: url.href,
        attempts: attempt,
        cause: Object.assign(new Error(code), { code }),
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** The answer's JSON, or a `bad_body` error quoting how it starts. */
  function parse(
    url: URL,
    where: string,
    raw: { text: string; contentType: string; attempts: number; link?: string },
  ) {
    try {
      return {
        body: parseJsonKeepingNumbers(raw.text),
        text: raw.text,
        attempts: raw.attempts,
        link: raw.link,
      };
    } catch {
      const kind = raw.contentType ? `content-type ${raw.contentType}, ` : '';
      const start = raw.text.trim() === '' ? 'an empty body' : `starting ${quote(raw.text, 200)}`;
      throw badBody(
        url,
        `answered something that is not JSON ${where} (${kind}${start}): check baseUrl and path, ` +
          'or whether the partner is in maintenance',
        raw.attempts,
      );
    }
  }

  return {
    async getJson(url, where) {
      return parse(url, where, await getRaw(url, where, false));
    },
    async getJsonOrNotFound(url, where) {
      const raw = await getRaw(url, where, true);
      if (raw.status !== 404) return parse(url, where, raw);
      // A 404 means "never executed" only when the partner's API said it; an HTML page is a proxy or a
      // wrong path answering, and reading it as "absent" could get an executed charge retried.
      let body: JsonValue | undefined;
      if (raw.text.trim() !== '') {
        try {
          body = parseJsonKeepingNumbers(raw.text);
        } catch {
          throw new PartnerApiError(
            `${prefix} answered HTTP 404 ${where} with a body that is not JSON, so it may not come from the ` +
              "partner's API: check baseUrl and lookup.path",
            { code: 'http_status', partner, url: url.href, status: 404, attempts: raw.attempts },
          );
        }
      }
      return { notFound: true, body, attempts: raw.attempts };
    },
    badBody,
    configError,
  };
}
