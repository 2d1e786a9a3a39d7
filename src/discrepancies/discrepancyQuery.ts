import type { DiscrepancyFilter } from './discrepancyTypes.js';

/** Sort keys a caller may ask for; anything else is refused (never interpolated into SQL). */
const DISCREPANCY_SORTS = ['createdAt', 'amountAtRisk', 'partner', 'kind', 'status'] as const;
export type DiscrepancySort = (typeof DISCREPANCY_SORTS)[number];

export function isDiscrepancySort(value: unknown): value is DiscrepancySort {
  return typeof value === 'string' && (DISCREPANCY_SORTS as readonly string[]).includes(value);
}

/** The order a filter lists in: its sort (default `createdAt`) and direction (default `desc`). */
export interface ListOrder {
  sort: DiscrepancySort;
  direction: 'asc' | 'desc';
}

/** The order `filter` asks for, defaults filled in; an unknown sort or direction is a RangeError. */
export function orderOf(filter: DiscrepancyFilter): ListOrder {
  const sort = filter.sort ?? 'createdAt';
  if (!isDiscrepancySort(sort)) throw new RangeError(`unknown sort ${JSON.stringify(sort)}`);
  const direction = filter.direction ?? 'desc';
  if (direction !== 'asc' && direction !== 'desc')
    throw new RangeError(`unknown sort direction ${JSON.stringify(direction)}`);
  return { sort, direction };
}

interface SortSpec {
  /** SQL expression sorted on (a constant of this file, never caller input). */
  expression: string;
  /** Type to cast a keyset cursor value back to. */
  cast: 'timestamptz' | 'numeric' | 'text' | 'integer';
  /** The expression as text that casts back exactly (timestamps to the microsecond, numerics exactly). */
  cursor: string;
  nullable: boolean;
  /**
   * Whether a cursor value a client sent back casts to `cast` (so a hand-made cursor is refused with a
   * message, never sent to PostgreSQL to fail there).
   */
  accepts: (value: string) => boolean;
}

const SORT_SPECS: Record<DiscrepancySort, SortSpec> = {
  createdAt: {
    expression: 'd.created_at',
    cast: 'timestamptz',
    cursor: `to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    nullable: false,
    accepts: isCursorInstant,
  },
  // numeric, not text: 9.50 sorts before 10.00. Unknown amounts (NULL) come last in both directions.
  amountAtRisk: {
    expression: 'd.amount_at_risk',
    cast: 'numeric',
    cursor: 'd.amount_at_risk::text',
    nullable: true,
    // What numeric::text writes, NaN and the infinities included (the column has no check against them).
    accepts: (value) => /^(-?\d+(\.\d+)?|NaN|-?Infinity)$/.test(value),
  },
  partner: {
    expression: 'd.partner',
    cast: 'text',
    cursor: 'd.partner',
    nullable: false,
    accepts: isCursorText,
  },
  kind: { expression: 'd.kind', cast: 'text', cursor: 'd.kind', nullable: false, accepts: isCursorText },
  // Workflow order, not alphabetical: open, acknowledged, resolved, dismissed.
  status: {
    expression: `array_position(ARRAY['open', 'acknowledged', 'resolved', 'dismissed'], d.status)`,
    cast: 'integer',
    cursor: `array_position(ARRAY['open', 'acknowledged', 'resolved', 'dismissed'], d.status)::text`,
    nullable: false,
    accepts: (value) => /^[1-4]$/.test(value),
  },
};

/** `created_at` as the createdAt cursor writes it: a real UTC instant to the microsecond. */
function isCursorInstant(value: string): boolean {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})\d{3}Z$/.exec(value);
  if (!match || match[1].startsWith('0000')) return false;
  // Round trip: 2026-02-30 or 25:00 would be moved by Date, not kept.
  const millis = `${match[1]}Z`;
  const date = new Date(millis);
  return !Number.isNaN(date.getTime()) && date.toISOString() === millis;
}

/** Any text but NUL, which PostgreSQL text cannot hold. */
function isCursorText(value: string): boolean {
  return !value.includes('\u0000');
}

/** Whether `value` can be where a page of `sort` ended (NULL only for a sort with NULLs). */
export function isCursorValue(sort: DiscrepancySort, value: string | null): boolean {
  const spec = SORT_SPECS[sort];
  return value === null ? spec.nullable : spec.accepts(value);
}

/** Where a keyset page ended: the sort value of its last row (as exact text) and that row's id. */
export interface KeysetCursor {
  value: string | null;
  id: string;
}

/** Builds parameterised SQL for a filter; every caller value goes through `values`, never into the text. */
export class DiscrepancyQuery {
  readonly values: unknown[] = [];
  readonly order: ListOrder;
  readonly sort: SortSpec;
  readonly direction: 'ASC' | 'DESC';
  private readonly conditions: string[] = [];

  constructor(filter: DiscrepancyFilter) {
    this.order = orderOf(filter);
    this.sort = SORT_SPECS[this.order.sort];
    this.direction = this.order.direction === 'asc' ? 'ASC' : 'DESC';

    if (filter.status?.length) this.conditions.push(`d.status = ANY(${this.param(filter.status)}::text[])`);
    if (filter.partner?.length)
      this.conditions.push(`d.partner = ANY(${this.param(filter.partner)}::text[])`);
    if (filter.kind?.length) this.conditions.push(`d.kind = ANY(${this.param(filter.kind)}::text[])`);
    if (filter.since !== undefined) {
      if (!(filter.since instanceof Date) || Number.isNaN(filter.since.getTime()))
        throw new RangeError('since must be a valid Date');
      this.conditions.push(`d.created_at >= ${this.param(filter.since)}::timestamptz`);
    }
    const search = filter.search?.trim();
    if (search) {
      // strpos, not LIKE: no wildcard characters to escape in what people type.
      const p = this.param(search.toLowerCase());
      this.conditions.push(
        `(strpos(lower(d.reference), ${p}) > 0 OR strpos(lower(d.partner_reference), ${p}) > 0)`,
      );
    }
  }

  /** Adds a value and returns its placeholder (`$n`). */
  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** `WHERE ...` for the filter plus `extra` conditions, or an empty string. */
  where(extra: string[] = []): string {
    const all = [...this.conditions, ...extra];
    return all.length ? `WHERE ${all.join(' AND ')}` : '';
  }

  /** Total order: the sort key, then the id in the same direction (stable pages, keyset-able). */
  orderBy(): string {
    return `ORDER BY ${this.sort.expression} ${this.direction} NULLS LAST, d.id ${this.direction}`;
  }

  /** The condition "comes after `cursor` in {@link orderBy} order". */
  after(cursor: KeysetCursor): string {
    const op = this.direction === 'ASC' ? '>' : '<';
    const e = this.sort.expression;
    const id = `${this.param(cursor.id)}::bigint`;
    if (cursor.value === null) {
      // Only NULL sort values remain (they come last); among them, by id.
      return `(${e} IS NULL AND d.id ${op} ${id})`;
    }
    const value = `${this.param(cursor.value)}::${this.sort.cast}`;
    if (!this.sort.nullable) return `((${e}, d.id) ${op} (${value}, ${id}))`;
    return `(${e} IS NULL OR ${e} ${op} ${value} OR (${e} = ${value} AND d.id ${op} ${id}))`;
  }
}
