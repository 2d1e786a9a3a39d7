import { createHash, randomUUID } from 'node:crypto';
import axios from 'axios';
import {
  type ApiSourceConfig,
  type ApiWindow,
  type ResolvedApiSourceConfig,
  resolveApiSourceConfig,
} from './apiSourceConfig.js';
import { parseDecimal } from './parseDecimal.js';
import { parseExecutedAt } from './parseExecutedAt.js';
import { PartnerApiError, withoutQuery } from './partnerApiError.js';
import type { RejectedRow, ReportItem } from './partnerRow.js';

/**
 * Streams what a partner's API listing says it executed, page by page: a page is fetched only when the
 * consumer has taken every item of the previous one, so memory stays flat however long the listing is.
 * Records become rows or rejected items exactly like CSV rows do; anything that makes the listing as a
 * whole unreadable (HTTP errors after retries, a body that is not the configured JSON, a looping cursor)
 * throws a {@link PartnerApiError} instead, because a partial listing must never pass for a complete one.
 */
export async function* readApiReport(
  config: ApiSourceConfig,
  options: ApiReadOptions & { window?: ApiWindow },
): AsyncGenerator<ReportItem> {
  const resolved = resolveApiSourceConfig(config);
  const client = createPartnerClient(resolved, options);
  if (!resolved.path) {
    throw client.configError('the source has no listing path; set path, or use lookupByReference');
  }
  const listing = joinUrl(resolved.baseUrl, resolved.path);
  for (const [name, value] of Object.entries(resolved.query)) listing.searchParams.set(name, value);
  if (options.window) {
    listing.searchParams.set(resolved.window.fromParam, options.window.from.toISOString());
    listing.searchParams.set(resolved.window.toParam, options.window.to.toISOString());
  }

  let line = 0;
  const pagination = resolved.pagination;
  if (pagination.type === 'none') {
    const page = await client.getJson(listing, 'in the listing');
    for (const item of itemsOf(page.body, resolved.itemsField, client, listing, 'in the listing')) {
      line += 1;
      yield mapApiItem(item, line, resolved.fields, options.timezone);
    }
    return;
  }

  if (pagination.type === 'cursor') {
    if (pagination.limit !== undefined) {
      listing.searchParams.set(pagination.limitParam, String(pagination.limit));
    }
    // Every cursor handed out so far: a partner that hands one out twice would make us read forever.
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let pageNumber = 1; ; pageNumber += 1) {
      const where = `at page ${pageNumber}`;
      const url = new URL(listing);
      if (cursor !== undefined) url.searchParams.set(pagination.cursorParam, cursor);
      const page = await client.getJson(url, where);
      const items = itemsOf(page.body, resolved.itemsField, client, url, where);
      const next = getPath(page.body, pagination.nextCursorField);
      if (next !== undefined && next !== null && typeof next !== 'string') {
        throw client.badBody(
          url,
          `field ${pagination.nextCursorField} is ${describe(next)} ${where}, expected a string or null: ` +
            'check pagination.nextCursorField',
        );
      }
      options.logger?.debug?.(
        { partner: options.partner, page: pageNumber, items: items.length },
        'partner page',
      );
      for (const item of items) {
        line += 1;
        yield mapApiItem(item, line, resolved.fields, options.timezone);
      }
      if (next === undefined || next === null || next === '') return;
      if (seen.has(next)) {
        throw new PartnerApiError(
          `partner ${options.partner}: cursor repeated ${where}: the listing loops back to a page it already ` +
            'gave, so it cannot be read completely; report it to the partner',
          { code: 'cursor_repeated', partner: options.partner, url: url.href, attempts: page.attempts },
        );
      }
      seen.add(next);
      cursor = next;
    }
  }

  if (pagination.size !== undefined) listing.searchParams.set(pagination.sizeParam, String(pagination.size));
  // A partner that ignores the page parameter answers page 1 forever; comparing each page with the one
  // before catches it without keeping any page in memory.
  let previousDigest: string | undefined;
  for (let pageNumber = pagination.firstPage; ; pageNumber += 1) {
    const where = `at page ${pageNumber}`;
    const url = new URL(listing);
    url.searchParams.set(pagination.pageParam, String(pageNumber));
    const page = await client.getJson(url, where);
    const items = itemsOf(page.body, resolved.itemsField, client, url, where);
    options.logger?.debug?.(
      { partner: options.partner, page: pageNumber, items: items.length },
      'partner page',
    );
    if (items.length === 0) return;
    const digest = createHash('sha256').update(page.text).digest('hex');
    if (digest === previousDigest) {
      throw client.badBody(
        url,
        `page ${pageNumber} is identical to page ${pageNumber - 1}: the partner seems to ignore the ` +
          `"${pagination.pageParam}" parameter; check pagination.pageParam`,
      );
    }
    previousDigest = digest;
    for (const item of items) {
      line += 1;
      yield mapApiItem(item, line, resolved.fields, options.timezone);
    }
    if (pagination.size !== undefined && items.length < pagination.size) return;
  }
}

/** What both API readers (listing and lookup) need besides the partner's configuration. */
export interface ApiReadOptions {
  /** The partner's name, for messages and logs. */
  partner: string;
  /** IANA zone for executedAt values without an offset, e.g. `America/Sao_Paulo`. */
  timezone: string;
  /** Where the token's environment variable is looked up. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Receives retries (warn) and pages (debug); never headers or the token. */
  logger?: { warn(obj: object, msg: string): void; debug?(obj: object, msg: string): void };
  /** Stops the read, including a backoff wait, with a PartnerApiError coded `aborted`. */
  signal?: AbortSignal;
}

// ---------------------------------------------------------------------------------------------------
// JSON that keeps the exact text of its numbers
// ---------------------------------------------------------------------------------------------------

/** A JSON number as the partner wrote it, e.g. `12.50` or `123456789012345678901`. */
export class JsonNumber {
  constructor(readonly source: string) {}
}

export type JsonValue = string | boolean | null | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const NUMBER_CHAR = /[-+.\deE]/;
const JSON_WHITESPACE = /[ \t\n\r]/;

/**
 * `JSON.parse`, except that numbers come back as {@link JsonNumber} holding their source text.
 *
 * Why: `JSON.parse` turns `0.10000000000000001` into the double `0.1` and `123456789012345678` (a typical
 * NSU) into `123456789012345680`, silently. Node 20 has no `context.source` in the reviver, so before
 * parsing, every number token outside a string is rewritten into a string carrying a random marker, and
 * the reviver turns those strings back into `JsonNumber`s. The rewrite cannot make invalid JSON valid:
 * number tokens are checked against the JSON grammar, and one followed by `:` (a string there would be an
 * object key) is refused. A partner cannot forge the marker: it is random per call.
 */
export function parseJsonKeepingNumbers(text: string): JsonValue {
  const marker = `\u0000${randomUUID()}:`;
  let rewritten = '';
  let copiedUpTo = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(text);
      const end = i + (match?.[0].length ?? 0);
      if (!match || (end < text.length && NUMBER_CHAR.test(text[end]))) {
        throw new SyntaxError(`invalid number at position ${i}`);
      }
      let after = end;
      while (after < text.length && JSON_WHITESPACE.test(text[after])) after += 1;
      if (text[after] === ':') throw new SyntaxError(`unexpected number at position ${i}`);
      rewritten += text.slice(copiedUpTo, i) + JSON.stringify(marker + match[0]);
      copiedUpTo = end;
      i = end;
      continue;
    }
    i += 1;
  }
  rewritten += text.slice(copiedUpTo);
  return JSON.parse(rewritten, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(marker)
      ? new JsonNumber(value.slice(marker.length))
      : value,
  ) as JsonValue;
}

function isJsonObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber)
  );
}

/** Follows a dot path (`result.items`, `amount.value`; `''` is the value itself); undefined when absent. */
export function getPath(value: JsonValue, path: string): JsonValue | undefined {
  if (path === '') return value;
  let current: JsonValue | undefined = value;
  for (const step of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(step)) current = current[Number(step)];
    else if (isJsonObject(current) && Object.hasOwn(current, step)) current = current[step];
    else return undefined;
  }
  return current;
}

/** "a string", "an object"... for messages a person reads. */
export function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (value instanceof JsonNumber) return 'a number';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------------------
// One item -> one row or one rejection
// ---------------------------------------------------------------------------------------------------

/**
 * More significant digits than this and a partner's encoder that went through a binary double may have
 * rounded the amount before writing it (a double keeps 15 decimal digits exactly, DBL_DIG); exponent
 * notation means the same kind of encoder. We cannot tell, so such amounts are rejected for a human to
 * see rather than guessed. Amounts sent as JSON strings are never affected.
 */
const MAX_EXACT_DIGITS = 15;

function numberIsExact(source: string): boolean {
  if (/[eE]/.test(source)) return false;
  const digits = source.replace(/[-.]/g, '').replace(/^0+/, '').replace(/0+$/, '');
  return digits.length <= MAX_EXACT_DIGITS;
}

type FieldResult<T> = { ok: true; value: T } | { ok: false; reason: string };

function readIdentifier(value: JsonValue | undefined): FieldResult<string | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  // Kept exactly as sent: the partner echoes our reference byte for byte, and a trimmed copy of a reference
  // with edge whitespace would match nothing and let absence "prove" an executed intent not executed.
  if (typeof value === 'string') return { ok: true, value: value.trim() === '' ? null : value };
  // The exact digits the partner sent, even beyond 2^53 where a double would have changed them.
  if (value instanceof JsonNumber) return { ok: true, value: value.source };
  return { ok: false, reason: `expected text or a number, found ${describe(value)}` };
}

function readAmount(value: JsonValue | undefined): FieldResult<string> {
  if (value === undefined || value === null) return { ok: false, reason: 'amount is missing' };
  if (value instanceof JsonNumber) {
    if (!numberIsExact(value.source)) {
      return {
        ok: false,
        reason: 'amount is a JSON number that cannot be represented exactly; send it as a string',
      };
    }
    return parseDecimal(value.source, { decimalSeparator: '.', thousandsSeparator: undefined });
  }
  if (typeof value === 'string') {
    // Same as CSV cells: surrounding blanks are the partner's formatting, not part of the amount.
    return parseDecimal(value.trim(), { decimalSeparator: '.', thousandsSeparator: undefined });
  }
  return { ok: false, reason: `expected a decimal amount such as "12.50", found ${describe(value)}` };
}

const CURRENCY = /^[A-Za-z]{3}$/;

function readCurrency(value: JsonValue | undefined): FieldResult<string> {
  if (value === undefined || value === null) return { ok: false, reason: 'currency is missing' };
  if (typeof value !== 'string') {
    return { ok: false, reason: `expected a 3-letter ISO 4217 code such as "BRL", found ${describe(value)}` };
  }
  const code = value.trim();
  if (!CURRENCY.test(code)) return { ok: false, reason: `"${code}" is not a 3-letter ISO 4217 code` };
  return { ok: true, value: code.toUpperCase() };
}

function readExecutedAt(value: JsonValue | undefined, timezone: string): FieldResult<Date> {
  if (value === undefined || value === null) return { ok: false, reason: 'execution time is missing' };
  if (typeof value !== 'string') {
    return { ok: false, reason: `expected an ISO 8601 date-time string, found ${describe(value)}` };
  }
  return parseExecutedAt(value, { timezone });
}

/**
 * Turns one listed item into a row, or into a rejection naming the configured field path that was wrong
 * (`*` when the item is not an object). The first problem found is reported, in field order.
 */
export function mapApiItem(
  item: JsonValue,
  line: number,
  fields: ApiSourceConfig['fields'],
  timezone: string,
): ReportItem {
  // Once both identifiers are read, a rejection carries them (see RejectedRow.identifiers).
  let identifiers: RejectedRow['identifiers'];
  const reject = (field: string, reason: string): ReportItem => ({
    kind: 'rejected',
    rejected: identifiers ? { line, field, reason, identifiers } : { line, field, reason },
  });
  if (!isJsonObject(item)) return reject('*', `the item is ${describe(item)}, not an object`);

  let reference: string | null = null;
  if (fields.reference !== undefined) {
    const read = readIdentifier(getPath(item, fields.reference));
    if (!read.ok) return reject(fields.reference, read.reason);
    reference = read.value;
  }
  let partnerReference: string | null = null;
  if (fields.partnerReference !== undefined) {
    const read = readIdentifier(getPath(item, fields.partnerReference));
    if (!read.ok) return reject(fields.partnerReference, read.reason);
    partnerReference = read.value;
  }
  identifiers = { reference, partnerReference };
  if (reference === null && partnerReference === null) {
    return reject(
      fields.reference ?? fields.partnerReference ?? '*',
      'has neither a reference nor a partner reference, so it cannot be matched to anything',
    );
  }

  let amount: string | null = null;
  if (fields.amount !== undefined) {
    const read = readAmount(getPath(item, fields.amount));
    if (!read.ok) return reject(fields.amount, read.reason);
    amount = read.value;
  }
  let currency: string | null = null;
  if (typeof fields.currency === 'object') {
    currency = fields.currency.value.trim().toUpperCase();
  } else if (fields.currency !== undefined) {
    const read = readCurrency(getPath(item, fields.currency));
    if (!read.ok) return reject(fields.currency, read.reason);
    currency = read.value;
  }
  let executedAt: Date | null = null;
  if (fields.executedAt !== undefined) {
    const read = readExecutedAt(getPath(item, fields.executedAt), timezone);
    if (!read.ok) return reject(fields.executedAt, read.reason);
    executedAt = read.value;
  }
  return { kind: 'row', row: { line, reference, partnerReference, amount, currency, executedAt } };
}

/** The items array of one answer, or a PartnerApiError saying which configured field was not one. */
export function itemsOf(
  body: JsonValue,
  itemsField: string,
  client: PartnerClient,
  url: URL,
  where: string,
): JsonValue[] {
  // A partner that says something went wrong has not given the complete listing, whatever items came with
  // it: taking them as complete would let absence prove "not executed" for charges it simply left out.
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && !(body instanceof JsonNumber)) {
    for (const member of ['error', 'errors']) {
      const reported = (body as Record<string, JsonValue>)[member];
      if (
        reported !== undefined &&
        reported !== null &&
        !(Array.isArray(reported) && reported.length === 0)
      ) {
        throw client.badBody(
          url,
          `the answer ${where} reports an error (${member}: ${describe(reported)}): it is not a complete listing`,
        );
      }
    }
  }
  const items = getPath(body, itemsField);
  if (Array.isArray(items)) return items;
  const name = itemsField === '' ? 'the answer' : `field ${itemsField}`;
  throw client.badBody(
    url,
    items === undefined
      ? `${name} is missing from the answer ${where}: check itemsField`
      : `${name} is not an array (it is ${describe(items)}) ${where}: check itemsField`,
  );
}

// ---------------------------------------------------------------------------------------------------
// HTTP: one GET with timeouts, retries and errors that never carry the token
// ---------------------------------------------------------------------------------------------------

/** Appends `path` to `baseUrl` (`new URL(path, base)` would drop a path part such as `/api`). */
export function joinUrl(baseUrl: string, path: string): URL {
  return new URL(baseUrl.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`));
}

/** Network failures worth another try: the next connection may well work. */
const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'ECONNABORTED',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/** Neither Retry-After nor backoff may stall a reconciliation run longer than this per attempt. */
const MAX_DELAY_MS = 30_000;

export interface PartnerClient {
  /** GETs `url` and parses the JSON answer, retrying as configured; throws PartnerApiError. */
  getJson(url: URL, where: string): Promise<{ body: JsonValue; text: string; attempts: number }>;
  /** Like `getJson`, except that a 404 answers `{ notFound: true }` instead of failing. */
  getJsonOrNotFound(
    url: URL,
    where: string,
  ): Promise<{ body: JsonValue; text: string; attempts: number } | { notFound: true; attempts: number }>;
  badBody(url: URL, what: string, attempts?: number): PartnerApiError;
  configError(what: string): PartnerApiError;
}

type Failure =
  | { kind: 'status'; status: number; retryAfterMs?: number }
  | { kind: 'timeout' }
  | { kind: 'network'; code: string };

/** Reads the token once and returns the GET helper both readers share. */
export function createPartnerClient(config: ResolvedApiSourceConfig, options: ApiReadOptions): PartnerClient {
  const { partner, logger, signal } = options;
  const base = `${config.baseUrl}${config.path}`;
  const prefix = `partner ${partner}:`;
  const configError = (what: string) =>
    new PartnerApiError(`${prefix} ${what}`, { code: 'config', partner, url: base, attempts: 0 });

  if (config.fields.reference === undefined && config.fields.partnerReference === undefined) {
    throw configError('fields must name reference or partnerReference (or both); rows could not be matched');
  }
  if (typeof config.fields.currency === 'object' && !CURRENCY.test(config.fields.currency.value.trim())) {
    throw configError(
      `fields.currency.value "${config.fields.currency.value}" is not a 3-letter ISO 4217 code`,
    );
  }
  for (const [name, value] of [
    ['timeoutMs', config.timeoutMs],
    ['retries', config.retries],
    ['retryBaseMs', config.retryBaseMs],
  ] as const) {
    if (!Number.isInteger(value) || value < 0 || (name === 'timeoutMs' && value === 0)) {
      throw configError(`${name} must be a ${name === 'timeoutMs' ? 'positive' : 'non-negative'} integer`);
    }
  }
  let parsedBase: URL | undefined;
  try {
    parsedBase = new URL(config.baseUrl);
  } catch {
    parsedBase = undefined;
  }
  if (!parsedBase || !/^https?:$/.test(parsedBase.protocol) || parsedBase.search || parsedBase.hash) {
    throw configError(
      `baseUrl "${withoutQuery(config.baseUrl)}" must be an absolute http(s) URL without query or fragment ` +
        '(fixed parameters go in query)',
    );
  }

  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'intent-ledger' };
  let token: string | undefined;
  if (config.auth) {
    token = (options.env ?? process.env)[config.auth.env];
    if (token === undefined || token === '') {
      throw new PartnerApiError(
        `${prefix} the environment variable ${config.auth.env} that should hold the API token is ` +
          `${token === undefined ? 'not set' : 'empty'}: set it before reading this partner`,
        { code: 'auth_missing', partner, url: base, attempts: 0 },
      );
    }
    headers[config.auth.header] = config.auth.scheme === '' ? token : `${config.auth.scheme} ${token}`;
  }

  /** Partner text quoted in messages: short, on one line, and without the token should it echo it back. */
  const quote = (text: string): string => {
    const redacted = token ? text.split(token).join('[redacted]') : text;
    const flat = redacted.replace(/\s+/g, ' ').trim();
    return JSON.stringify(flat.length > 120 ? `${flat.slice(0, 120)}...` : flat);
  };

  const badBody = (url: URL, what: string, attempts = 1) =>
    new PartnerApiError(`${prefix} ${what}`, { code: 'bad_body', partner, url: url.href, attempts });

  const aborted = (url: URL, attempts: number) =>
    new PartnerApiError(`${prefix} the read was stopped by its caller`, {
      code: 'aborted',
      partner,
      url: url.href,
      attempts,
    });

  async function getRaw(url: URL, where: string, notFoundIsEmpty: boolean) {
    const maxAttempts = config.retries + 1;
    let lastFailure: Failure | undefined;
    for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
      if (signal?.aborted) throw aborted(url, attempt - 1);
      const outcome = await attemptOnce(url, attempt);
      if ('failure' in outcome) {
        lastFailure = outcome.failure;
      } else {
        const { status, text, contentType, location } = outcome;
        if (status >= 200 && status < 300) return { status, text, contentType, attempts: attempt };
        if (status === 404 && notFoundIsEmpty) return { status, text, contentType, attempts: attempt };
        if (status !== 429 && status < 500) {
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
      const backoff = config.retryBaseMs * 2 ** (attempt - 1);
      const jittered = backoff / 2 + (Math.random() * backoff) / 2;
      const retryAfterMs = lastFailure.kind === 'status' ? lastFailure.retryAfterMs : undefined;
      const delayMs = Math.round(Math.min(MAX_DELAY_MS, retryAfterMs ?? jittered));
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

  function explainStatus(status: number, where: string, text: string, location: string | undefined): string {
    if ((status === 401 || status === 403) && config.auth) {
      return (
        `answered HTTP ${status} ${where}: check the token in env ${config.auth.env} ` +
        `(and that it may read ${withoutQuery(base)})`
      );
    }
    if (status === 401 || status === 403) {
      return `answered HTTP ${status} ${where}: the partner wants credentials; configure auth`;
    }
    if (status >= 300 && status < 400) {
      // Redirects are not followed: a custom auth header would travel to wherever the partner points.
      return (
        `answered HTTP ${status} ${where} (a redirect to ${location ? withoutQuery(location) : 'nowhere'}): ` +
        'set baseUrl to the final address'
      );
    }
    if (status === 404) return `answered HTTP 404 ${where}: check baseUrl and path`;
    return `answered HTTP ${status} ${where}, saying ${quote(text)}: check the query parameters and the configuration`;
  }

  function exhausted(url: URL, where: string, failure: Failure, attempts: number): PartnerApiError {
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

  async function attemptOnce(
    url: URL,
    attempt: number,
  ): Promise<
    | { failure: Failure }
    | { status: number; text: string; contentType: string; location?: string; retryAfterMs?: number }
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
      const response = await axios.request<string>({
        url: url.href,
        method: 'GET',
        headers,
        responseType: 'text',
        // The body is parsed here, keeping numbers exact; axios must not parse it first.
        transformResponse: [(data: unknown) => data],
        validateStatus: () => true,
        maxRedirects: 0,
        signal: controller.signal,
      });
      const header = (name: string) => {
        const value: unknown = response.headers[name];
        return typeof value === 'string' ? value : undefined;
      };
      return {
        status: response.status,
        text: typeof response.data === 'string' ? response.data : String(response.data ?? ''),
        contentType: header('content-type') ?? '',
        location: header('location'),
        retryAfterMs: parseRetryAfter(header('retry-after')),
      };
    } catch (error) {
      if (signal?.aborted) throw aborted(url, attempt);
      if (timedOut) return { failure: { kind: 'timeout' } };
      // Only the code is kept: axios errors hold the request configuration, headers and token included.
      const code = axios.isAxiosError(error) ? (error.code ?? 'ERR_UNKNOWN') : 'ERR_UNKNOWN';
      if (RETRYABLE_NETWORK_CODES.has(code)) return { failure: { kind: 'network', code } };
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

  function parse(url: URL, where: string, raw: { text: string; contentType: string; attempts: number }) {
    try {
      return { body: parseJsonKeepingNumbers(raw.text), text: raw.text, attempts: raw.attempts };
    } catch {
      const kind = raw.contentType ? `content-type ${raw.contentType}, ` : '';
      const start = raw.text.trim() === '' ? 'an empty body' : `starting ${quote(raw.text.slice(0, 200))}`;
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
      if (raw.text.trim() !== '') {
        try {
          parseJsonKeepingNumbers(raw.text);
        } catch {
          throw new PartnerApiError(
            `${prefix} answered HTTP 404 ${where} with a body that is not JSON, so it may not come from the ` +
              "partner's API: check baseUrl and lookup.path",
            { code: 'http_status', partner, url: url.href, status: 404, attempts: raw.attempts },
          );
        }
      }
      return { notFound: true, attempts: raw.attempts };
    },
    badBody,
    configError,
  };
}

/** `Retry-After` as delay-seconds or an HTTP date; undefined when absent or unreadable. */
function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
