import type { Queryable } from '../sql/queryable.js';

/**
 * Turns the staged rows into `rec_report`, the table every later step reads: each row gets its identity,
 * the key under which `partner_records` remembers it across runs, so a re-run of the same report finds
 * its rows already there.
 *
 * Identity: the partner reference when the row has one, else `ref:<reference>|<amount>|<executed_at>`
 * (amount without trailing zeros, time in ISO 8601 UTC), plus `#<n>`, the occurrence of that base in line
 * order, so two genuinely identical executions in one report are two records, not one.
 *
 * Built with CREATE TABLE AS rather than an UPDATE of the staging table: one sequential write, no dead
 * tuples. Indexes are created after loading (cheaper than maintaining them row by row), only on the columns
 * the match rule joins on, and the table is ANALYZEd, since autovacuum never analyzes temp tables and the
 * planner would otherwise guess its size.
 */
export async function identifyRows(
  db: Queryable,
  match: 'reference' | 'partnerReference' | 'amount',
): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_report ON COMMIT DROP AS
     SELECT s.line, s.reference, s.partner_reference, s.amount, s.currency, s.executed_at,
            b.base || '#' || row_number() OVER (PARTITION BY b.base ORDER BY s.line) AS identity
       FROM rec_staged s
      CROSS JOIN LATERAL (
        SELECT COALESCE(s.partner_reference,
                        'ref:' || COALESCE(s.reference, '') || '|' || COALESCE(trim_scale(s.amount)::text, '') || '|' ||
                        COALESCE(to_char(s.executed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '')) AS base
      ) b`,
  );
  await db.query('DROP TABLE rec_staged');
  await db.query('ALTER TABLE rec_report ADD PRIMARY KEY (line)');
  if (match === 'reference') await db.query('CREATE INDEX ON rec_report (reference)');
  if (match === 'partnerReference') await db.query('CREATE INDEX ON rec_report (partner_reference)');
  if (match === 'amount') await db.query('CREATE INDEX ON rec_report (currency, executed_at)');
  await db.query('ANALYZE rec_report');
}

/** Rows of the report and the span of their execution times. */
export async function reportExtent(
  db: Queryable,
): Promise<{ rows: number; from: Date | null; to: Date | null }> {
  const result = await db.query<{ rows: number; from: Date | null; to: Date | null }>(
    'SELECT count(*)::int AS rows, min(executed_at) AS "from", max(executed_at) AS "to" FROM rec_report',
  );
  return result.rows[0];
}
