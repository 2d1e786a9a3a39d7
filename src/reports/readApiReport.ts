import { createHash } from 'node:crypto';
import {
  type ApiSourceConfig,
  type ApiWindow,
  type ResolvedApiSourceConfig,
  resolveApiSourceConfig,
} from './apiSourceConfig.js';
import { PartnerApiError } from './errors/PartnerApiError.js';
import { itemsOf } from './itemsOf.js';
import { joinUrl } from './joinUrl.js';
import { listedWindow } from './listedWindow.js';
import { mapApiItem } from './mapApiItem.js';
import { nextFromLink, nextPageUrl } from './nextPage.js';
import { describe, getPath, JsonNumber, type JsonValue } from './parseJsonKeepingNumbers.js';
import { createPartnerClient, type PartnerClient } from './partnerClient.js';
import type { RowItem } from './partnerRow.js';
import { RepeatedRecords } from './repeatedRecords.js';

/**
 * Streams what a partner's API listing says it executed, page by page: a page is fetched only when the
 * consumer has taken every item of the previous one, so no more than a page is held, besides a digest of
 * each record read ({@link RepeatedRecords}, about 80 bytes a record).
 * Records become rows or rejected items exactly like CSV rows do; anything that makes the listing as a
 * whole unreadable (HTTP errors after retries, a body that is not the configured JSON, a looping cursor, a
 * record given twice: {@link RepeatedRecords}) throws a {@link PartnerApiError} instead, because a partial
 * listing must never pass for a complete one.
 */
export async function* readApiReport(
  config: ApiSourceConfig,
  options: ApiReadOptions & { window?: ApiWindow },
): AsyncGenerator<RowItem> {
  const resolved = resolveApiSourceConfig(config);
  // One budget for the whole listing: it aborts the request in flight too, like the caller's signal does.
  const deadline = new AbortController();
  const deadlineTimer = setTimeout(() => deadline.abort(), resolved.listingTimeoutMs);
  deadlineTimer.unref();
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  const client = createPartnerClient(resolved, { ...options, signal });
  const pastDeadline = (url: string) =>
    new PartnerApiError(
      `partner ${options.partner}: the listing took longer than ${resolved.listingTimeoutMs} ms ` +
        '(listingTimeoutMs) and was stopped: narrow the window, ask for bigger pages or raise listingTimeoutMs',
      { code: 'deadline', partner: options.partner, url, attempts: 0 },
    );
  try {
    yield* readPages(resolved, client, options, (url) => {
      if (deadline.signal.aborted) throw pastDeadline(url.href);
    });
  } catch (error) {
    // The deadline aborted the request in flight: the client reports that as `aborted`, which it is not.
    if (deadline.signal.aborted && !options.signal?.aborted && (error as PartnerApiError).code === 'aborted')
      throw pastDeadline((error as PartnerApiError).url);
    throw error;
  } finally {
    clearTimeout(deadlineTimer);
  }
}

/** The listing itself, page by page, within `resolved.maxPages` (the deadline is {@link readApiReport}'s). */
async function* readPages(
  resolved: ResolvedApiSourceConfig,
  client: PartnerClient,
  options: ApiReadOptions & { window?: ApiWindow },
  checkDeadline: (url: URL) => void,
): AsyncGenerator<RowItem> {
  if (!resolved.path) {
    throw client.configError('the source has no listing path; set path, or use lookupByReference');
  }
  const listing = joinUrl(resolved.baseUrl, resolved.path);
  for (const [name, value] of Object.entries(resolved.query)) listing.searchParams.set(name, value);
  if (options.window) {
    // The very window openReportSource declares as the coverage: listedWindow rounds it for both.
    const { from, to } = listedWindow(options.window, resolved.window.format);
    const write = (at: Date) =>
      resolved.window.format === 'seconds' ? at.toISOString().replace(/\.\d{3}Z$/, 'Z') : at.toISOString();
    listing.searchParams.set(resolved.window.fromParam, write(from));
    listing.searchParams.set(resolved.window.toParam, write(to));
  }

  let line = 0;
  const repeated = new RepeatedRecords();
  /** The listing's next record, mapped; a record it gave before throws (see {@link RepeatedRecords}). */
  const record = (item: JsonValue, where: string, url: URL, attempts: number): RowItem => {
    line += 1;
    const mapped = mapApiItem(item, line, resolved.fields, options.timezone, resolved);
    const first = repeated.seenBefore(mapped, item);
    if (first === undefined) return mapped;
    throw new PartnerApiError(
      `partner ${options.partner}: record ${line} ${where} is record ${first} again, field for field: ` +
        'the listing gives records twice, so pages overlap or repeat and it cannot be read completely; ' +
        'report it to the partner',
      { code: 'record_repeated', partner: options.partner, url: url.href, attempts },
    );
  };
  const pagination = resolved.pagination;
  /**
   * Past the cap with pages still to come: the listing is not read to its end, so it must not count. The one
   * cap check of every pagination, made once a page says another follows.
   */
  const capReached = (url: URL) =>
    new PartnerApiError(
      `partner ${options.partner}: the listing goes on past ${resolved.maxPages} pages (maxPages) and was ` +
        'stopped: the partner may be handing out endless cursors; narrow the window, ask for bigger pages ' +
        'or raise maxPages',
      { code: 'too_many_pages', partner: options.partner, url: url.href, attempts: 0 },
    );

  if (pagination.type === 'none') {
    const page = await client.getJson(listing, 'in the listing');
    for (const item of itemsOf(page.body, resolved.itemsField, client, listing, 'in the listing')) {
      yield record(item, 'in the listing', listing, page.attempts);
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
      checkDeadline(url);
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
      const last = next === undefined || next === null || next === '';
      // Before this page's records: a looping listing repeats them too, and the loop is the finding.
      if (!last && seen.has(next)) {
        throw new PartnerApiError(
          `partner ${options.partner}: cursor repeated ${where}: the listing loops back to a page it already ` +
            'gave, so it cannot be read completely; report it to the partner',
          { code: 'cursor_repeated', partner: options.partner, url: url.href, attempts: page.attempts },
        );
      }
      for (const item of items) {
        yield record(item, where, url, page.attempts);
      }
      if (last) return;
      if (pageNumber >= resolved.maxPages) throw capReached(url);
      seen.add(next);
      cursor = next;
    }
  }

  if (pagination.type === 'next' || pagination.type === 'link') {
    // Every address handed out so far: a partner pointing back to a page already read would loop forever.
    const seen = new Set<string>([listing.href]);
    let url = listing;
    for (let pageNumber = 1; ; pageNumber += 1) {
      const where = `at page ${pageNumber}`;
      checkDeadline(url);
      const page = await client.getJson(url, where);
      const items = itemsOf(page.body, resolved.itemsField, client, url, where);
      options.logger?.debug?.(
        { partner: options.partner, page: pageNumber, items: items.length },
        'partner page',
      );
      const next =
        pagination.type === 'next'
          ? nextPageUrl(page.body, pagination.nextField, listing, (what) =>
              client.badBody(url, `${what} ${where}`),
            )
          : nextFromLink(page.link, url, listing, (what) => client.badBody(url, `${what} ${where}`));
      // Before this page's records: a looping listing repeats them too, and the loop is the finding.
      if (next !== undefined && seen.has(next.href)) {
        throw new PartnerApiError(
          `partner ${options.partner}: the next page ${where} is one already read: the listing loops, so it ` +
            'cannot be read completely; report it to the partner',
          { code: 'cursor_repeated', partner: options.partner, url: url.href, attempts: page.attempts },
        );
      }
      for (const item of items) {
        yield record(item, where, url, page.attempts);
      }
      if (next === undefined) return;
      if (pageNumber >= resolved.maxPages) throw capReached(url);
      seen.add(next.href);
      url = next;
    }
  }

  if (pagination.type === 'hasMore') {
    if (pagination.limit !== undefined)
      listing.searchParams.set(pagination.limitParam, String(pagination.limit));
    const seen = new Set<string>();
    let after: string | undefined;
    for (let pageNumber = 1; ; pageNumber += 1) {
      const where = `at page ${pageNumber}`;
      const url = new URL(listing);
      if (after !== undefined) url.searchParams.set(pagination.afterParam, after);
      checkDeadline(url);
      const page = await client.getJson(url, where);
      const items = itemsOf(page.body, resolved.itemsField, client, url, where);
      const hasMore = getPath(page.body, pagination.hasMoreField);
      if (typeof hasMore !== 'boolean') {
        throw client.badBody(
          url,
          `field ${pagination.hasMoreField} is ${describe(hasMore)} ${where}, expected true or false: check pagination.hasMoreField`,
        );
      }
      options.logger?.debug?.(
        { partner: options.partner, page: pageNumber, items: items.length },
        'partner page',
      );
      // Before this page's records, as the other paginations do: a looping listing repeats them too.
      const last =
        hasMore && items.length > 0 ? getPath(items[items.length - 1]!, pagination.idField) : undefined;
      if (hasMore && (typeof last !== 'string' || last === '')) {
        throw client.badBody(
          url,
          `says ${pagination.hasMoreField}: true ${where}, but its last item has no ${pagination.idField} to ask for the next page`,
        );
      }
      if (typeof last === 'string' && seen.has(last)) {
        throw new PartnerApiError(
          `partner ${options.partner}: ${where} ends with ${JSON.stringify(last)} again: the listing loops, so ` +
            'it cannot be read completely; report it to the partner',
          { code: 'cursor_repeated', partner: options.partner, url: url.href, attempts: page.attempts },
        );
      }
      for (const item of items) {
        yield record(item, where, url, page.attempts);
      }
      if (typeof last !== 'string') return;
      if (pageNumber >= resolved.maxPages) throw capReached(url);
      seen.add(last);
      after = last;
    }
  }

  if (pagination.size !== undefined) listing.searchParams.set(pagination.sizeParam, String(pagination.size));
  // A partner that ignores the page parameter answers page 1 forever; comparing each page with the one
  // before catches it without keeping any page in memory.
  let previousDigest: string | undefined;
  // What the first page says the listing holds (pagination.total), which every later page must repeat.
  let total: number | undefined;
  let itemsRead = 0;
  for (let pageNumber = pagination.firstPage; ; pageNumber += 1) {
    const where = `at page ${pageNumber}`;
    const url = new URL(listing);
    checkDeadline(url);
    url.searchParams.set(pagination.pageParam, String(pageNumber));
    const page = await client.getJson(url, where);
    const items = itemsOf(page.body, resolved.itemsField, client, url, where);
    if (pagination.total !== undefined) {
      const said = totalOf(page.body, pagination.total, (what) => client.badBody(url, `${what} ${where}`));
      if (total !== undefined && said !== total) {
        throw client.badBody(
          url,
          `says the listing holds ${said} items ${where}, where page ${pagination.firstPage} said ${total}: ` +
            'the listing changed while it was read (numbered pages shift), so it cannot be read completely; ' +
            'narrow the window or retry later',
        );
      }
      total = said;
    }
    options.logger?.debug?.(
      { partner: options.partner, page: pageNumber, items: items.length },
      'partner page',
    );
    // Only an empty page ends the listing: a page shorter than `size` does not, since many partners clamp
    // the size they are asked for to a maximum of their own without saying so.
    if (items.length === 0) {
      if (total !== undefined && itemsRead !== total) {
        throw client.badBody(
          url,
          `is empty ${where} after ${itemsRead} items, but the listing says it holds ${total} ` +
            `(${pagination.total}): pages are missing, so it cannot be read completely; report it to the partner`,
        );
      }
      return;
    }
    const digest = createHash('sha256').update(page.text).digest('hex');
    if (digest === previousDigest) {
      throw client.badBody(
        url,
        `page ${pageNumber} is identical to page ${pageNumber - 1}: the partner seems to ignore the ` +
          `"${pagination.pageParam}" parameter; check pagination.pageParam`,
      );
    }
    previousDigest = digest;
    itemsRead += items.length;
    if (total !== undefined && itemsRead > total) {
      throw client.badBody(
        url,
        `gives item ${itemsRead} ${where}, but the listing says it holds ${total} (${pagination.total}): ` +
          'it cannot be read completely; report it to the partner',
      );
    }
    for (const item of items) {
      yield record(item, where, url, page.attempts);
    }
    if (pageNumber - pagination.firstPage + 1 >= resolved.maxPages) throw capReached(url);
  }
}

/** The item count an answer declares at `path` (pagination.total): a non-negative integer, or the error. */
function totalOf(body: JsonValue, path: string, bad: (what: string) => PartnerApiError): number {
  const value = getPath(body, path);
  const count = value instanceof JsonNumber && /^\d+$/.test(value.source) ? Number(value.source) : Number.NaN;
  if (!Number.isSafeInteger(count)) {
    throw bad(
      `field ${path} is ${describe(value)}, expected the listing's item count (a whole JSON number): ` +
        'check pagination.total',
    );
  }
  return count;
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
