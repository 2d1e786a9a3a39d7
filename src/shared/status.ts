/** Where an intent stands. Mirrored by the CHECK constraint on `intents.status` (migration 0001). */
export const IntentStatus = {
  /** An attempt holds the lease and may be talking to the partner right now. */
  InProgress: 'in_progress',
  /** The partner executed it; the stored result is replayed, the partner is never called again. */
  Completed: 'completed',
  /** The partner definitely said no and did nothing; replayed as a rejection. */
  Rejected: 'rejected',
  /** Provably not executed: the next claim may try again (attempt + 1). */
  NotExecuted: 'not_executed',
  /** The call may or may not have happened: waits for reconciliation, never retried blindly. */
  Unknown: 'unknown',
} as const;
export type IntentStatus = (typeof IntentStatus)[keyof typeof IntentStatus];

/** Kinds of discrepancy. Mirrored by the CHECK constraint on `discrepancies.kind`. */
export const DiscrepancyKind = {
  DuplicateExecution: 'duplicate_execution',
  AmountMismatch: 'amount_mismatch',
  CurrencyMismatch: 'currency_mismatch',
  MissingAtPartner: 'missing_at_partner',
  OrphanPartnerRecord: 'orphan_partner_record',
  Unresolved: 'unresolved',
  LateCompletion: 'late_completion',
  /** A partner row that could be the execution of more than one intent: none of them is decided from it. */
  AmbiguousMatch: 'ambiguous_match',
} as const;
export type DiscrepancyKind = (typeof DiscrepancyKind)[keyof typeof DiscrepancyKind];

/** Review workflow of a discrepancy: `open -> acknowledged -> resolved | dismissed`. */
export const DiscrepancyStatus = {
  Open: 'open',
  Acknowledged: 'acknowledged',
  Resolved: 'resolved',
  Dismissed: 'dismissed',
} as const;
export type DiscrepancyStatus = (typeof DiscrepancyStatus)[keyof typeof DiscrepancyStatus];

/** Every discrepancy status, in workflow order: what the CLI's `--status` and the site's `?status=` accept. */
export const DISCREPANCY_STATUSES: readonly DiscrepancyStatus[] = Object.values(DiscrepancyStatus);

/** Every discrepancy kind: what the CLI's `--kind` and the site's `?kind=` accept. */
export const DISCREPANCY_KINDS: readonly DiscrepancyKind[] = Object.values(DiscrepancyKind);
