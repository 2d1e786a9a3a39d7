import type { Queryable } from '../database/queryable.js';
import type { DiscrepancyKind, DiscrepancyStatus } from '../shared/status.js';
import { DiscrepancyQuery } from './discrepancyQuery.js';
import type { DiscrepancyFilter, DiscrepancySummary } from './discrepancyTypes.js';
import { streamDiscrepanciesKeyset } from './keysetDiscrepancies.js';
import { countDiscrepancies } from './listDiscrepancies.js';

/**
 * The statuses whose money is still at risk: nothing is settled until a discrepancy is resolved or
 * dismissed. Acknowledging one says someone is on it; its amount stays in every "at risk" total.
 */
const UNSETTLED = "d.status IN ('open', 'acknowledged')";

/** How long unsettled discrepancies have been waiting (since they were raised), in PostgreSQL's clock. */
const AGE_BUCKETS = ['<1d', '1-3d', '3-7d', '7-30d', '>30d'] as const;
type AgeBucket = (typeof AGE_BUCKETS)[number];

/**
 * Unsettled (open and acknowledged) discrepancies of one group in one currency. Amounts are never added
 * across currencies.
 */
export interface CurrencyTotal {
  /** ISO 4217 code; null for discrepancies whose currency is unknown. */
  currency: string | null;
  count: number;
  /** Exact sum (PostgreSQL numeric) of the known amounts at risk, open and acknowledged together. */
  amountAtRisk: string;
  /** How many of `count` have no amount at risk (not in the sum). */
  withoutAmount: number;
  /** The acknowledged part of `count` and `amountAtRisk` (someone is on it; the rest is still open). */
  acknowledged: { count: number; amountAtRisk: string };
}

export interface GroupTotal<K extends string> extends CurrencyTotal {
  key: K;
}

export interface SummaryData {
  /** PostgreSQL's `now()` when the numbers were taken (ages are relative to it). */
  generatedAt: Date;
  filter: DiscrepancyFilter;
  /** Discrepancies by status for the filter without its status part. */
  statusCounts: { status: DiscrepancyStatus; count: number }[];
  /**
   * Totals of UNSETTLED discrepancies (open and acknowledged) matching the filter's partner, kind, since and
   * search (the status filter applies to the table only): the money still at risk.
   */
  atRisk: {
    count: number;
    byCurrency: CurrencyTotal[];
    byPartner: GroupTotal<string>[];
    byKind: GroupTotal<DiscrepancyKind>[];
    /** Every bucket, in order, even empty ones; each with its totals per currency. */
    ageing: { bucket: AgeBucket; count: number; byCurrency: CurrencyTotal[] }[];
  };
  /** The table: discrepancies matching the whole filter, at most `tableLimit` of them. */
  rows: DiscrepancySummary[];
  /** How many match the whole filter (the table may show fewer). */
  totalRows: number;
}

interface AggregateRow {
  set: number;
  partner: string | null;
  kind: DiscrepancyKind | null;
  bucket: AgeBucket | null;
  currency: string | null;
  count: string;
  amount: string;
  without_amount: string;
  acknowledged: string;
  acknowledged_amount: string;
}

/**
 * Everything the HTML report shows, with every total computed by PostgreSQL (numeric sums, grouped by
 * currency, so two currencies are never added together) in one GROUPING SETS query.
 */
export async function summaryData(
  db: Queryable,
  filter: DiscrepancyFilter = {},
  options: { tableLimit?: number } = {},
): Promise<SummaryData> {
  const tableLimit = options.tableLimit ?? 1000;
  const { status: _status, limit: _limit, offset: _offset, ...scope } = filter;

  const unsettled = new DiscrepancyQuery(scope);
  const aggregates = await db.query<AggregateRow>(
    `WITH o AS (
       SELECT d.partner, d.kind, d.currency, d.amount_at_risk, d.status,
              CASE WHEN now() - d.created_at < interval '1 day' THEN '<1d'
                   WHEN now() - d.created_at < interval '3 days' THEN '1-3d'
                   WHEN now() - d.created_at < interval '7 days' THEN '3-7d'
                   WHEN now() - d.created_at < interval '30 days' THEN '7-30d'
                   ELSE '>30d' END AS bucket
         FROM discrepancies d ${unsettled.where([UNSETTLED])}
     )
     SELECT grouping(partner, kind, bucket) AS set, partner, kind, bucket, currency,
            count(*) AS count, coalesce(sum(amount_at_risk), 0)::text AS amount,
            count(*) - count(amount_at_risk) AS without_amount,
            count(*) FILTER (WHERE status = 'acknowledged') AS acknowledged,
            coalesce(sum(amount_at_risk) FILTER (WHERE status = 'acknowledged'), 0)::text AS acknowledged_amount
       FROM o
      GROUP BY GROUPING SETS ((currency), (partner, currency), (kind, currency), (bucket, currency))
      ORDER BY set, partner, kind, bucket, currency NULLS LAST`,
    unsettled.values,
  );
  const byStatus = new DiscrepancyQuery(scope);
  const [statuses, clock, totalRows, rows] = await Promise.all([
    db.query<{ status: DiscrepancyStatus; count: string }>(
      `SELECT d.status, count(*) AS count FROM discrepancies d ${byStatus.where()}
        GROUP BY d.status
        ORDER BY array_position(ARRAY['open', 'acknowledged', 'resolved', 'dismissed'], d.status)`,
      byStatus.values,
    ),
    db.query<{ now: Date }>('SELECT now() AS now'),
    countDiscrepancies(db, filter),
    collect(streamDiscrepanciesKeyset(db, { ...filter, offset: undefined, limit: tableLimit })),
  ]);

  // grouping() bits, most significant first: partner, kind, bucket (1 = not grouped by it).
  const of = (set: number) => aggregates.rows.filter((row) => row.set === set);
  const total = (row: AggregateRow): CurrencyTotal => ({
    currency: row.currency,
    count: Number(row.count),
    amountAtRisk: row.amount,
    withoutAmount: Number(row.without_amount),
    acknowledged: { count: Number(row.acknowledged), amountAtRisk: row.acknowledged_amount },
  });
  const byCurrency = of(0b111).map(total);
  const ageingRows = of(0b110);
  return {
    generatedAt: clock.rows[0].now,
    filter,
    statusCounts: statuses.rows.map((row) => ({ status: row.status, count: Number(row.count) })),
    atRisk: {
      count: byCurrency.reduce((sum, row) => sum + row.count, 0),
      byCurrency,
      byPartner: of(0b011).map((row) => ({ key: row.partner as string, ...total(row) })),
      byKind: of(0b101).map((row) => ({ key: row.kind as DiscrepancyKind, ...total(row) })),
      ageing: AGE_BUCKETS.map((bucket) => {
        const inBucket = ageingRows.filter((row) => row.bucket === bucket).map(total);
        return { bucket, count: inBucket.reduce((sum, row) => sum + row.count, 0), byCurrency: inBucket };
      }),
    },
    rows,
    totalRows,
  };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
