import type { Queryable } from '../../database/queryable.js';
import type { Json } from '../../shared/types.js';

export interface FinishedReconciliationRun {
  id: string;
  status: 'succeeded' | 'failed' | 'dry_run';
  checksum: string | null;
  coverageFrom: Date | null;
  coverageTo: Date | null;
  rowsRead: number;
  rowsRejected: number;
  rowsByKind: Record<string, number>;
  matched: number;
  resolvedCompleted: number;
  resolvedNotExecuted: number;
  discrepancies: Record<string, number>;
  /** Already cut to what the column keeps. */
  rejected: Json;
  warnings: string[];
  error: string | null;
}

/**
 * Closes a run row with its outcome; only a row still `running` is closed (a run is finished once). Returns
 * false when the row was no longer running: another process closed it as `abandoned` (its heartbeat had
 * gone stale). A succeeded run calls this inside its own transaction, before COMMIT, so its changes and
 * its row commit together: a kill between the two cannot leave applied changes under a `running` row,
 * which the next run would then call abandoned. Hence statement_timestamp(), not the transaction's now().
 */
export async function finishReconciliationRun(
  db: Queryable,
  run: FinishedReconciliationRun,
): Promise<boolean> {
  const result = await db.query(
    `UPDATE reconciliation_runs
        SET status = $2, checksum = $3, coverage_from = $4, coverage_to = $5, rows_read = $6, rows_rejected = $7,
            matched = $8, resolved_completed = $9, resolved_not_executed = $10, discrepancies = $11::jsonb,
            rejected = $12::jsonb, error = $13, warnings = $14::jsonb, rows_by_kind = $15::jsonb,
            finished_at = statement_timestamp(), heartbeat_at = statement_timestamp()
      WHERE id = $1 AND status = 'running'`,
    [
      run.id,
      run.status,
      run.checksum,
      run.coverageFrom,
      run.coverageTo,
      run.rowsRead,
      run.rowsRejected,
      run.matched,
      run.resolvedCompleted,
      run.resolvedNotExecuted,
      JSON.stringify(run.discrepancies),
      JSON.stringify(run.rejected),
      run.error,
      JSON.stringify(run.warnings),
      JSON.stringify(run.rowsByKind),
    ],
  );
  return result.rowCount === 1;
}
