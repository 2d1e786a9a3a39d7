import type { Queryable } from '../../database/queryable.js';

/**
 * Serialises the deciding part of reconciliation runs of one partner (a manual run and a scheduled one,
 * or two files of a glob run by two processes), until the end of the caller's transaction. Staging a
 * report needs no lock and runs in parallel; matching and applying see each other's committed results
 * instead of deciding on the same stale rows and deadlocking on them. Callers of the ledger never take it:
 * their single-row writes only meet the run's fenced UPDATEs.
 */
export async function lockPartnerReconciliation(
  db: Queryable,
  partner: string,
  checkpoint: () => void = () => {},
): Promise<void> {
  // Tried, not waited for in PostgreSQL: a run waiting on another process's long run (or on a connection
  // whose client vanished) must still stop when told to (ReconciliationWorker.stop, SIGTERM), and a
  // blocking pg_advisory_xact_lock cannot be interrupted from here short of cancelling the backend.
  // `checkpoint` throws once the run is aborted.
  for (let waitMs = 10; ; waitMs = Math.min(waitMs * 2, MAX_POLL_MS)) {
    const result = await db.query<{ got: boolean }>(
      `SELECT pg_try_advisory_xact_lock(hashtextextended('intent-ledger:reconcile:' || $1, 0)) AS got`,
      [partner],
    );
    if (result.rows[0].got) return;
    checkpoint();
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    checkpoint();
  }
}

/** Longest pause between two tries: how late a run notices the lock was freed, or that it must stop. */
const MAX_POLL_MS = 250;
