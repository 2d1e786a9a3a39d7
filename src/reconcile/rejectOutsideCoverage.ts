import type { Queryable } from '../database/queryable.js';
import type { RejectedRow } from '../reports/partnerRow.js';
import type { Coverage } from './coverage.js';
import { MAX_REPORTED_REJECTIONS } from './reconciliationResult.js';

/**
 * Rows dated outside the period their report declares (a row dated 2062 in a daily file, one an hour after
 * the run began) are the partner's word all the same, but not within what the report vouches for: they
 * are taken out of `rec_staged` into the rejections, reported with their line and the report's time column,
 * and, as every identified rejection, keep the intents they name from being proven absent (`rec_rejected`).
 * They never stretch the coverage. Returns them in line order (the first {@link MAX_REPORTED_REJECTIONS}) and
 * how many there were.
 */
export async function rejectOutsideCoverage(
  db: Queryable,
  coverage: Coverage,
  timeColumn: string,
): Promise<{ count: number; rejected: RejectedRow[] }> {
  const outside = await db.query<{ line: number; at: string }>(
    `WITH outside AS (
       DELETE FROM rec_staged
        WHERE executed_at_ms < $1::bigint OR executed_at_ms > $2::bigint
        RETURNING line, reference, partner_reference, executed_at_ms
     ), shielded AS (
       INSERT INTO rec_rejected (line, reference, partner_reference)
       SELECT line, reference, partner_reference FROM outside
        WHERE reference IS NOT NULL OR partner_reference IS NOT NULL
     )
     SELECT line, to_char(to_timestamp(executed_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at
       FROM outside ORDER BY line`,
    [coverage.from.getTime(), coverage.to.getTime()],
  );
  const period = `${coverage.from.toISOString()} to ${coverage.to.toISOString()}`;
  return {
    count: outside.rowCount ?? 0,
    rejected: outside.rows.slice(0, MAX_REPORTED_REJECTIONS).map((row) => ({
      line: row.line,
      field: timeColumn,
      reason: `executed at ${row.at}, outside the period the report declares it is complete for (${period})`,
    })),
  };
}
