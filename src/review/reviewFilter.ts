import {
  DISCREPANCY_SORTS,
  type DiscrepancySort,
  isDiscrepancySort,
} from '../discrepancies/discrepancyQuery.js';
import type { DiscrepancyFilter } from '../discrepancies/discrepancyTypes.js';
import { DiscrepancyKind, DiscrepancyStatus } from '../status.js';
import { type FormBody, field, fieldList } from './httpParsing.js';

export const STATUSES: readonly DiscrepancyStatus[] = Object.values(DiscrepancyStatus);
export const KINDS: readonly DiscrepancyKind[] = Object.values(DiscrepancyKind);
export const SORTS = DISCREPANCY_SORTS;
export type SortColumn = DiscrepancySort;

export const PAGE_SIZE = 50;
export const MAX_API_LIMIT = 500;

/** What a query string asks for: the filter for the discrepancy functions, the page, and what was wrong. */
export interface ParsedFilter {
  /** Without limit/offset: for exports and the report. */
  filter: DiscrepancyFilter;
  page: number;
  limit: number;
  offset: number;
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
 * instant; `sort`/`dir` pick the order; `page` (pages) or `limit`/`offset` (API) pick the slice.
 */
export function parseFilter(query: FormBody | undefined, options: { api?: boolean } = {}): ParsedFilter {
  const errors: string[] = [];
  const params = new URLSearchParams();
  const filter: DiscrepancyFilter = {};

  const statuses = unique(fieldList(query, 'status'));
  const badStatus = statuses.filter((s) => !STATUSES.includes(s as DiscrepancyStatus));
  if (badStatus.length) errors.push(`unknown status ${badStatus.map(quote).join(', ')}`);
  const status = statuses.filter((s): s is DiscrepancyStatus => STATUSES.includes(s as DiscrepancyStatus));
  if (status.length) {
    filter.status = status;
    params.set('status', status.join(','));
  }

  const kinds = unique(fieldList(query, 'kind'));
  const badKind = kinds.filter((k) => !KINDS.includes(k as DiscrepancyKind));
  if (badKind.length) errors.push(`unknown kind ${badKind.map(quote).join(', ')}`);
  const kind = kinds.filter((k): k is DiscrepancyKind => KINDS.includes(k as DiscrepancyKind));
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
    if (since) {
      filter.since = since;
      params.set('since', sinceText);
    } else errors.push(`"since" must be a date like 2025-01-31 or an ISO instant`);
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

  let page = 1;
  let limit = PAGE_SIZE;
  if (options.api) {
    limit = positiveInt(field(query, 'limit'), PAGE_SIZE, errors, 'limit');
    if (limit > MAX_API_LIMIT) {
      errors.push(`limit is at most ${MAX_API_LIMIT}`);
      limit = MAX_API_LIMIT;
    }
    const offset = positiveInt(field(query, 'offset'), 0, errors, 'offset', true);
    page = Math.floor(offset / limit) + 1;
    return { filter, page, limit, offset, params, errors };
  }
  page = positiveInt(field(query, 'page'), 1, errors, 'page');
  return { filter, page, limit, offset: (page - 1) * limit, params, errors };
}

/** The filter for the slice the request asked for. */
export function pageOf(parsed: ParsedFilter): DiscrepancyFilter {
  return { ...parsed.filter, limit: parsed.limit, offset: parsed.offset };
}

/** `2025-01-31` (midnight UTC) or a full ISO-8601 instant with a zone; anything else is null. */
export function parseSince(text: string): Date | null {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const date = new Date(`${text}T00:00:00Z`);
    return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text ? null : date;
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) {
    const date = new Date(text);
    return Number.isNaN(date.getTime()) ? null : date;
  }
  return null;
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
