import { type DiscrepancySort, isDiscrepancySort, orderOf } from '../discrepancies/discrepancyQuery.js';
import type { DiscrepancyFilter } from '../discrepancies/discrepancyTypes.js';
import {
  DEFAULT_PAGE_SIZE,
  type DiscrepancyPageFilter,
  MAX_PAGE_SIZE,
} from '../discrepancies/listDiscrepancies.js';
import { readPageCursor } from '../discrepancies/pageCursor.js';
import { parseSince, SinceError } from '../shared/since.js';
import {
  DISCREPANCY_KINDS,
  DISCREPANCY_STATUSES,
  type DiscrepancyKind,
  type DiscrepancyStatus,
} from '../shared/status.js';
import { type FormBody, field, fieldList } from './httpParsing.js';

export type SortColumn = DiscrepancySort;

/** What a query string asks for: the filter for the discrepancy functions, the page, and what was wrong. */
export interface ParsedFilter {
  /** Without limit/offset/after: for exports and the report. */
  filter: DiscrepancyFilter;
  limit: number;
  /** Rows skipped before the page (the API's `offset`); 0 when `after` is given. */
  offset: number;
  /** The `next` cursor of the page before this one (checked against the sort), or null for the first. */
  after: string | null;
  /** The same query, normalised (invalid parts dropped): for links that keep the filter. */
  params: URLSearchParams;
  /** Human-readable problems with the query; invalid parts are ignored, not guessed. */
  errors: string[];
}

const SEARCH_MAX = 200;
const PARTNER_MAX = 100;

/**
 * Reads the filter the list page, the CSV export, the report and the JSON API share. `status`, `partner`
 * and `kind` may repeat or be comma-separated; `since` is a date (`2025-01-31`, midnight UTC) or an ISO
 * instant; `sort`/`dir` pick the order; `after` (a `next` cursor of the same sort) picks where the page
 * starts, and the API also takes `limit`, and `offset` instead of `after` for older scripts.
 */
export function parseFilter(query: FormBody | undefined, options: { api?: boolean } = {}): ParsedFilter {
  const errors: string[] = [];
  const params = new URLSearchParams();
  const filter: DiscrepancyFilter = {};

  const statuses = unique(fieldList(query, 'status'));
  const badStatus = statuses.filter((s) => !DISCREPANCY_STATUSES.includes(s as DiscrepancyStatus));
  if (badStatus.length) errors.push(`unknown status ${badStatus.map(quote).join(', ')}`);
  const status = statuses.filter((s): s is DiscrepancyStatus =>
    DISCREPANCY_STATUSES.includes(s as DiscrepancyStatus),
  );
  if (status.length) {
    filter.status = status;
    params.set('status', status.join(','));
  }

  const kinds = unique(fieldList(query, 'kind'));
  const badKind = kinds.filter((k) => !DISCREPANCY_KINDS.includes(k as DiscrepancyKind));
  if (badKind.length) errors.push(`unknown kind ${badKind.map(quote).join(', ')}`);
  const kind = kinds.filter((k): k is DiscrepancyKind => DISCREPANCY_KINDS.includes(k as DiscrepancyKind));
  if (kind.length) {
    filter.kind = kind;
    params.set('kind', kind.join(','));
  }

  const partners = unique(fieldList(query, 'partner')).filter((p) => p.length <= PARTNER_MAX);
  if (partners.length) {
    filter.partner = partners;
    params.set('partner', partners.join(','));
  }

  const sinceText = field(query, 'since').trim();
  if (sinceText) {
    const since = parseSince(sinceText);
    if (since instanceof SinceError) errors.push(since.message);
    else {
      filter.since = since;
      params.set('since', sinceText);
    }
  }

  const search = field(query, 'search').trim();
  if (search) {
    if (search.length > SEARCH_MAX) errors.push(`search is limited to ${SEARCH_MAX} characters`);
    else {
      filter.search = search;
      params.set('search', search);
    }
  }

  const sort = field(query, 'sort');
  if (sort) {
    if (isDiscrepancySort(sort)) {
      filter.sort = sort;
      params.set('sort', sort);
    } else errors.push(`cannot sort by ${quote(sort)}`);
  }
  const dir = field(query, 'dir') || field(query, 'direction');
  if (dir) {
    if (dir === 'asc' || dir === 'desc') {
      filter.direction = dir;
      params.set('dir', dir);
    } else errors.push(`direction must be asc or desc`);
  }

  let after: string | null = null;
  const afterText = field(query, 'after');
  if (afterText) {
    const read = readPageCursor(afterText, orderOf(filter));
    if ('problem' in read) errors.push(read.problem);
    else after = afterText;
  }

  if (options.api) {
    let limit = positiveInt(field(query, 'limit'), DEFAULT_PAGE_SIZE, errors, 'limit');
    if (limit > MAX_PAGE_SIZE) {
      errors.push(`limit is at most ${MAX_PAGE_SIZE}`);
      limit = MAX_PAGE_SIZE;
    }
    const offsetText = field(query, 'offset');
    if (offsetText && afterText) {
      errors.push('after and offset cannot be used together (after already says where the page starts)');
      return { filter, limit, offset: 0, after: null, params, errors };
    }
    const offset = positiveInt(offsetText, 0, errors, 'offset', true);
    return { filter, limit, offset, after, params, errors };
  }
  // Numbered pages counted rows again on every click: a row acknowledged on page 1 hid one from page 2.
  if (field(query, 'page'))
    errors.push('page numbers are gone (showing the first page): follow Next → to go on exactly');
  return { filter, limit: DEFAULT_PAGE_SIZE, offset: 0, after, params, errors };
}

/** The filter for the slice the request asked for. */
export function pageOf(parsed: ParsedFilter): DiscrepancyPageFilter {
  if (parsed.after !== null) return { ...parsed.filter, limit: parsed.limit, after: parsed.after };
  return { ...parsed.filter, limit: parsed.limit, offset: parsed.offset };
}

function positiveInt(text: string, fallback: number, errors: string[], name: string, zeroOk = false): number {
  if (!text) return fallback;
  const min = zeroOk ? 0 : 1;
  if (!/^\d{1,9}$/.test(text) || Number(text) < min) {
    errors.push(`${name} must be a whole number${zeroOk ? '' : ' from 1'}`);
    return fallback;
  }
  return Number(text);
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function quote(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}
