import type { Queryable } from '../../database/queryable.js';

/**
 * Serialises the deciding part of reconciliation runs of one partner (a manual run and a scheduled one,
 * or two files of a glob run by two processes), until the end of the caller's transaction. Staging a
 * report needs no lock and runs in parallel; matching and applying see each other's committed results
 * instead of deciding on the same stale rows and deadlocking on them. Callers of the ledger never take it:
 * their single-row writes only meet the run's fenced UPDATEs.
 */
export async function lockPartnerReconciliation(db: Queryable, partner: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('intent-ledger:reconcile:' || $1, 0))`, [
    partner,
  ]);
}
