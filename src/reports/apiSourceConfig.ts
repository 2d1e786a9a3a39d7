import type { AmountConvention } from './amountConvention.js';
import type { NoSuchReferenceAnswer } from './noSuchReference.js';
import type { RowKindRule } from './rowKind.js';

/**
 * How to read a partner's executions from its HTTP API instead of a CSV file. One object per partner,
 * usually kept next to the partner's other settings; {@link resolveApiSourceConfig} applies the defaults.
 */
export interface ApiSourceConfig {
  type: 'api';
  /**
   * Where the partner's API lives, e.g. `https://api.acme-pay.example`. A path part is kept: `path` is
   * appended to it, not resolved against it.
   */
  baseUrl: string;
  /** The listing path, e.g. `/v1/settlements`. May be omitted (empty) for partners that only offer `lookup`. */
  path: string;
  /**
   * How to authenticate: a token in a header (bearer by default), or HTTP Basic (RFC 7617) from two
   * environment variables, `{ basic: { usernameEnv: 'TWILIO_ACCOUNT_SID', passwordEnv: 'TWILIO_AUTH_TOKEN' } }`.
   * Without it, requests carry no credentials. Secrets never appear in configuration, logs or errors; only
   * the variables' names do.
   */
  auth?: ApiTokenAuth | { basic: { usernameEnv: string; passwordEnv: string } };
  /**
   * How the listing is split into pages.
   * @default { type: 'none' }
   */
  pagination?:
    | ApiCursorPagination
    | ApiPagePagination
    | ApiNextPagination
    | ApiHasMorePagination
    | { type: 'link' }
    | { type: 'none' };
  /**
   * Dot path to the array of items in each answer (`'data'`, `'result.items'`); `''` means the answer
   * itself is the array.
   * @default 'data'
   */
  itemsField?: string;
  /**
   * Extra fixed query parameters sent with every listing request (e.g. `{ status: 'settled' }`).
   * @default {}
   */
  query?: Record<string, string>;
  /** The query parameters that ask for executions in a window of time. */
  window?: {
    /**
     * Receives the start of the window (inclusive) as an ISO 8601 UTC string.
     * @default 'from'
     */
    fromParam?: string;
    /**
     * Receives the end of the window (exclusive) as an ISO 8601 UTC string.
     * @default 'to'
     */
    toParam?: string;
    /**
     * How the two instants are written: `'iso'` (`2026-11-30T10:00:00.000Z`), or `'seconds'`
     * (`2026-11-30T10:00:00Z`, for APIs that take no fraction, such as Twilio's `DateSent`): both ends are
     * rounded down to the second, and the listing declares that rounded window as its coverage, never the
     * window before rounding (see listedWindow.ts for why down, at both ends).
     * @default 'iso'
     */
    format?: 'iso' | 'seconds';
  };
  /**
   * Dot paths into each item. At least one of `reference` and `partnerReference` is required; a field
   * left out becomes `null` in every row.
   */
  fields: {
    /** Our reference as the partner echoes it. @default undefined (not reported) */
    reference?: string;
    /** The partner's own id for the execution. @default undefined (not reported) */
    partnerReference?: string;
    /** The amount, as a JSON string (preferred) or a JSON number. @default undefined (not reported) */
    amount?: string;
    /**
     * A dot path to the ISO 4217 code (any case), or `{ value: 'BRL' }` when the partner deals in a
     * single currency and does not report it.
     * @default undefined (not reported)
     */
    currency?: string | { value: string };
    /** When the partner executed it, an ISO 8601 string. @default undefined (not reported) */
    executedAt?: string;
  };
  /**
   * How each item's kind (execution, reversal, failed, ignored) is read; the rule's columns are dot paths
   * into the item (see {@link RowKindRule}). A value the rule does not know rejects the item.
   * @default undefined (every item is an execution)
   */
  kind?: RowKindRule;
  /**
   * How amounts are written: minor units, absolute values (see {@link AmountConvention}; the sign from
   * another field is for CSV reports only).
   * @default undefined (major units, signed as sent)
   */
  amount?: Pick<AmountConvention, 'units' | 'absolute'>;
  /**
   * Luxon format of `fields.executedAt` when it is not ISO 8601, e.g. Twilio's RFC 2822 dates
   * (`Wed, 18 Aug 2010 20:01:40 +0000`): `'EEE, dd MMM yyyy HH:mm:ss ZZZ'`.
   * @default undefined (ISO 8601)
   */
  dateFormat?: string;
  /**
   * Whether an item may have no amount yet (`null` or absent), read as unknown (compared with nothing)
   * instead of rejected: for partners that document it, such as Twilio's `price` before a message is priced.
   * @default false
   */
  amountMayBeMissing?: boolean;
  /**
   * Budget for one request, from connecting to the last byte of the answer.
   * @default 10000
   */
  timeoutMs?: number;
  /**
   * How many times a failed request is tried again (so at most `retries + 1` attempts). Only network
   * errors, timeouts, 429 and 5xx are retried; other 4xx answers are not going to change.
   * @default 3
   */
  retries?: number;
  /**
   * First backoff delay; it doubles on every retry, with jitter, capped at 30 s.
   * @default 200
   */
  retryBaseMs?: number;
  /**
   * Largest answer read from one request, in bytes. The body is streamed and the request aborted as soon
   * as it grows past this (or at once when `content-length` says it would), so a partner cannot exhaust
   * the worker's memory; the run then fails with code `body_too_large`.
   * @default 33554432 (32 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Most pages read from one listing; a partner that keeps handing out new cursors (or pages) fails the
   * run with code `too_many_pages` instead of keeping it going forever.
   * @default 10000
   */
  maxPages?: number;
  /**
   * Budget for the whole listing, first request to last page: past it, the request in flight is aborted
   * and the run fails with code `deadline`.
   * @default 1800000 (30 minutes)
   */
  listingTimeoutMs?: number;
  /** Per-intent lookup, for partners without a listing or to double-check a single reference. */
  lookup?: {
    /**
     * Path with a `{reference}` placeholder, URL-encoded when filled in, e.g.
     * `/v1/transactions?reference={reference}` or `/v1/transactions/{reference}`.
     */
    path: string;
    /**
     * Dot path to the items in the answer; `''` means the answer itself is the item (an object) or the
     * items (an array).
     * @default the top-level `itemsField`
     */
    itemsField?: string;
    /**
     * What the partner's HTTP 404 for a reference it has nothing under looks like (see
     * {@link NoSuchReferenceAnswer}): only such an answer means "never executed". Any other 404 (a wrong
     * path, a gateway's or a proxy's page) fails the run, and without this every 404 does.
     */
    notFound?: NoSuchReferenceAnswer;
  };
}

/** A token sent in a header, read from an environment variable. */
interface ApiTokenAuth {
  /**
   * The request header that carries the token.
   * @default 'Authorization'
   */
  header?: string;
  /**
   * Name of the environment variable holding the token. The token itself never appears in
   * configuration, logs or errors; only this name does.
   */
  env: string;
  /**
   * Written before the token with a space (`Bearer abc`); `''` sends the raw token.
   * @default 'Bearer'
   */
  scheme?: string;
}

/**
 * Each answer gives the address of the next page in a field (Twilio's `next_page_uri`): an absolute URL,
 * or a path resolved against `baseUrl`'s origin. It must be the listing's own address, origin and path,
 * with only its query changed (credentials are never sent elsewhere, and another path's items, another
 * account's say, are not this listing's): anything else fails the run. `null`, missing or `''` ends the
 * listing. With `{ type: 'link' }` instead, the next page is the `Link: <...>; rel="next"` header (RFC 8288),
 * held to the same rule.
 */
interface ApiNextPagination {
  type: 'next';
  /**
   * Dot path to the next page's address.
   * @default 'next_page_uri'
   */
  nextField?: string;
}

/**
 * Stripe-style: `has_more` says whether another page follows, asked for with the last item's id
 * (`starting_after=<id>`).
 */
interface ApiHasMorePagination {
  type: 'hasMore';
  /** @default 'has_more' */
  hasMoreField?: string;
  /** Dot path to each item's id. @default 'id' */
  idField?: string;
  /** @default 'starting_after' */
  afterParam?: string;
  /** @default 'limit' */
  limitParam?: string;
  /** Page size to ask for. @default undefined (the partner's own default) */
  limit?: number;
}

/** The partner hands back an opaque cursor with each page and takes it to give the next one. */
interface ApiCursorPagination {
  type: 'cursor';
  /**
   * Query parameter that sends the cursor back.
   * @default 'cursor'
   */
  cursorParam?: string;
  /**
   * Dot path to the next cursor in each answer; `null`, missing or `''` means this was the last page.
   * @default 'next_cursor'
   */
  nextCursorField?: string;
  /**
   * Query parameter for the page size; only sent when `limit` is set.
   * @default 'limit'
   */
  limitParam?: string;
  /** Page size to ask for. @default undefined (the partner's own default) */
  limit?: number;
}

/**
 * The partner numbers its pages; only an empty page ends the listing. A page shorter than `size` does not:
 * partners clamp the size they are asked for to a maximum of their own, often without saying so, and the
 * pages after a "short" one still hold executions.
 */
interface ApiPagePagination {
  type: 'page';
  /**
   * Query parameter for the page number.
   * @default 'page'
   */
  pageParam?: string;
  /**
   * Query parameter for the page size; only sent when `size` is set.
   * @default 'size'
   */
  sizeParam?: string;
  /** Page size to ask for. @default undefined (the partner's own default) */
  size?: number;
  /**
   * Number of the first page.
   * @default 1
   */
  firstPage?: number;
  /**
   * Dot path to the item count the answer declares for the whole listing (`'total'`,
   * `'meta.total_count'`). With it, every page must declare the same count, and the listing, ended by its
   * first empty page, must have given exactly that many items; otherwise the run fails (code `bad_body`)
   * and applies nothing: an empty page the partner hands out mid-listing would otherwise pass for the end.
   * @default undefined (the first empty page is taken as the end)
   */
  total?: string;
}

/** The executions to list: `from` inclusive, `to` exclusive. */
export interface ApiWindow {
  from: Date;
  to: Date;
}

/** {@link ApiSourceConfig} with every default applied, so the readers never repeat them. */
export interface ResolvedApiSourceConfig {
  baseUrl: string;
  path: string;
  auth:
    | { type: 'bearer'; header: string; env: string; scheme: string }
    | { type: 'basic'; usernameEnv: string; passwordEnv: string }
    | undefined;
  pagination:
    | { type: 'cursor'; cursorParam: string; nextCursorField: string; limitParam: string; limit?: number }
    | {
        type: 'page';
        pageParam: string;
        sizeParam: string;
        size?: number;
        firstPage: number;
        total?: string;
      }
    | { type: 'next'; nextField: string }
    | { type: 'link' }
    | {
        type: 'hasMore';
        hasMoreField: string;
        idField: string;
        afterParam: string;
        limitParam: string;
        limit?: number;
      }
    | { type: 'none' };
  itemsField: string;
  query: Record<string, string>;
  window: { fromParam: string; toParam: string; format: 'iso' | 'seconds' };
  fields: ApiSourceConfig['fields'];
  kind: RowKindRule | undefined;
  amount: Pick<AmountConvention, 'units' | 'absolute'> | undefined;
  dateFormat: string | undefined;
  amountMayBeMissing: boolean;
  timeoutMs: number;
  retries: number;
  retryBaseMs: number;
  maxBodyBytes: number;
  maxPages: number;
  listingTimeoutMs: number;
  lookup: { path: string; itemsField: string; notFound: NoSuchReferenceAnswer | undefined } | undefined;
}

/** A pagination with its documented defaults applied. */
function resolvePagination(
  pagination: NonNullable<ApiSourceConfig['pagination']>,
): ResolvedApiSourceConfig['pagination'] {
  switch (pagination.type) {
    case 'next':
      return { type: 'next', nextField: pagination.nextField ?? 'next_page_uri' };
    case 'link':
      return { type: 'link' };
    case 'hasMore':
      return {
        type: 'hasMore',
        hasMoreField: pagination.hasMoreField ?? 'has_more',
        idField: pagination.idField ?? 'id',
        afterParam: pagination.afterParam ?? 'starting_after',
        limitParam: pagination.limitParam ?? 'limit',
        limit: pagination.limit,
      };
    case 'cursor':
      return {
        type: 'cursor',
        cursorParam: pagination.cursorParam ?? 'cursor',
        nextCursorField: pagination.nextCursorField ?? 'next_cursor',
        limitParam: pagination.limitParam ?? 'limit',
        limit: pagination.limit,
      };
    case 'page':
      return {
        type: 'page',
        pageParam: pagination.pageParam ?? 'page',
        sizeParam: pagination.sizeParam ?? 'size',
        size: pagination.size,
        firstPage: pagination.firstPage ?? 1,
        total: pagination.total,
      };
    default:
      return { type: 'none' };
  }
}

/** The one place where the defaults documented on {@link ApiSourceConfig} are applied. */
export function resolveApiSourceConfig(config: ApiSourceConfig): ResolvedApiSourceConfig {
  const itemsField = config.itemsField ?? 'data';
  return {
    baseUrl: config.baseUrl,
    path: config.path,
    auth: resolveAuth(config.auth),
    pagination: resolvePagination(config.pagination ?? { type: 'none' }),
    itemsField,
    query: config.query ?? {},
    window: {
      fromParam: config.window?.fromParam ?? 'from',
      toParam: config.window?.toParam ?? 'to',
      format: config.window?.format ?? 'iso',
    },
    fields: config.fields,
    kind: config.kind,
    amount: config.amount,
    dateFormat: config.dateFormat,
    amountMayBeMissing: config.amountMayBeMissing === true,
    timeoutMs: config.timeoutMs ?? 10_000,
    retries: config.retries ?? 3,
    retryBaseMs: config.retryBaseMs ?? 200,
    maxBodyBytes: config.maxBodyBytes ?? 32 * 1024 * 1024,
    maxPages: config.maxPages ?? 10_000,
    listingTimeoutMs: config.listingTimeoutMs ?? 30 * 60_000,
    lookup: config.lookup && {
      path: config.lookup.path,
      itemsField: config.lookup.itemsField ?? itemsField,
      notFound: config.lookup.notFound,
    },
  };
}

function resolveAuth(auth: ApiSourceConfig['auth']): ResolvedApiSourceConfig['auth'] {
  if (auth === undefined) return undefined;
  if ('basic' in auth) {
    return { type: 'basic', usernameEnv: auth.basic.usernameEnv, passwordEnv: auth.basic.passwordEnv };
  }
  return {
    type: 'bearer',
    header: auth.header ?? 'Authorization',
    env: auth.env,
    scheme: auth.scheme ?? 'Bearer',
  };
}
