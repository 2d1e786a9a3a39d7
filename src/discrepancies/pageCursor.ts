/**
 * The opaque `after`/`next` cursor of a discrepancy list: where a page ended, as base64url of JSON
 * `{ sort, dir, value, id }` (the sort, its direction, the last row's exact sort value as text and its id).
 * It is not signed: a hand-made one can only ask for rows the same filter shows anyway. Reading one checks
 * everything PostgreSQL would otherwise fail on, so a bad cursor is a message naming `after`, never a 500.
 */
import { isCursorValue, isDiscrepancySort, type KeysetCursor, type ListOrder } from './discrepancyQuery.js';

/** Far more than any cursor this module writes; refuses a megabyte of base64 before decoding it. */
const CURSOR_MAX_LENGTH = 4096;
const BIGINT_MAX = 9223372036854775807n;

/** The cursor for "the rows after `last`" in `order`. */
export function encodePageCursor(order: ListOrder, last: KeysetCursor): string {
  const body = { sort: order.sort, dir: order.direction, value: last.value, id: last.id };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/** The position `text` names in `order`, or what is wrong with it. */
export function readPageCursor(
  text: string,
  order: ListOrder,
): { cursor: KeysetCursor } | { problem: string } {
  const notOurs = { problem: 'after is not a cursor this list gave as next' };
  if (text.length === 0 || text.length > CURSOR_MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(text)) return notOurs;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return notOurs;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return notOurs;
  const { sort, dir, value, id } = body as Record<string, unknown>;
  if (!isDiscrepancySort(sort) || (dir !== 'asc' && dir !== 'desc')) return notOurs;
  if (sort !== order.sort || dir !== order.direction)
    return {
      problem: `after is a cursor of the list sorted by ${sort} ${dir}, not by ${order.sort} ${order.direction} (start again without after)`,
    };
  if (typeof id !== 'string' || !/^[1-9]\d{0,18}$/.test(id) || BigInt(id) > BIGINT_MAX) return notOurs;
  if (!(value === null || typeof value === 'string') || !isCursorValue(sort, value)) return notOurs;
  return { cursor: { value, id } };
}
