import type { Queryable } from '../database/queryable.js';
import { executedAtName } from '../reports/fixedWidthSourceConfig.js';
import type { Coverage } from './coverage.js';
import { MAX_REPORTED_REJECTIONS } from './reconciliationResult.js';
import type { RunSettings } from './runSettings.js';
import type { StageResult } from './stageReport.js';

/**
 * Rows dated outside the period their report declares (a row dated 2062 in a daily file, one an hour after
 * the run began) are the partner's word all the same, but not within what the report vouches for: they
 * are taken out of `rec_staged` into the rejections, reported with their line and the report's time column,
 * and, as every identified rejection, keep the intents they name from being proven absent (`rec_rejected`).
 * They never stretch the coverage. Their count and the first {@link MAX_REPORTED_REJECTIONS} of them go into
 * `staged`, in line order with the rejections of the reading.
 */
export async function rejectOutsideCoverage(
  db: Queryable,
  input: { coverage: Coverage; settings: RunSettings; staged: StageResult },
): Promise<void> {
  const { coverage, staged } = input;
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
  const field = timeColumnOf(input.settings);
  const count = outside.rowCount ?? 0;
  staged.rowsRejected += count;
  staged.extent.rows -= count;
  for (const row of outside.rows.slice(0, MAX_REPORTED_REJECTIONS)) {
    const reason = `executed at ${row.at}, outside the period the report declares it is complete for (${period})`;
    staged.rejected.push({ line: row.line, field, reason });
  }
  staged.rejected.sort((a, b) => a.line - b.line);
  staged.rejected.length = Math.min(staged.rejected.length, MAX_REPORTED_REJECTIONS);
}

/** The report's own name for its execution-time column, as rejections name it. */
function timeColumnOf(settings: RunSettings): string {
  const source = settings.source;
  if (source.type === 'fixedWidth') {
    // One name if every data record reads its time from the same fields, else ours.
    const names = new Set(
      Object.values(source.config.records)
        .filter((layout) => !layout.ignored && layout.executedAt)
        .map((layout) => executedAtName(layout)),
    );
    return names.size === 1 ? [...names][0]! : 'executedAt';
  }
  const column = source.type === 'csv' ? source.config.columns.executedAt : source.config.fields.executedAt;
  return column ?? 'executedAt';
}
