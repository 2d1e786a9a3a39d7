import type { Queryable } from '../../database/queryable.js';

/**
 * Takes run `runId`'s row FOR KEY SHARE until the caller's transaction ends, and fails if it is gone: the
 * lock a foreign key to the run would take for every row naming it, taken once before a statement that
 * writes many (partner records, discrepancies). Deleting the run then waits for the caller's commit and is
 * refused by `reconciliation_runs_keep_records` (migrations 0003 and 0020).
 */
export async function holdRun(db: Queryable, runId: string): Promise<void> {
  const run = await db.query('SELECT 1 FROM reconciliation_runs WHERE id = $1 FOR KEY SHARE', [runId]);
  if (run.rowCount !== 1) throw new Error(`reconciliation run ${runId} does not exist`);
}
