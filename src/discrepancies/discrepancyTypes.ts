import type { DiscrepancyKind, DiscrepancyStatus } from '../shared/status.js';
import type { Intent, Json } from '../shared/types.js';

/** A discrepancy as finance sees it in lists and exports. Amounts are exact decimal strings. */
export interface DiscrepancySummary {
  id: string;
  kind: DiscrepancyKind;
  partner: string;
  status: DiscrepancyStatus;
  reference: string | null;
  partnerReference: string | null;
  /** What could be lost or owed, in `currency`; null when unknown. */
  amountAtRisk: string | null;
  currency: string | null;
  summary: string;
  assignee: string | null;
  intentId: string | null;
  runId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One change of a discrepancy's review state; the history is append-only. */
export interface DiscrepancyHistoryEntry {
  id: string;
  fromStatus: DiscrepancyStatus | null;
  toStatus: DiscrepancyStatus;
  actor: string;
  note: string | null;
  assignee: string | null;
  at: Date;
}

/** A partner row behind a discrepancy, as the partner reported it. */
export interface PartnerRecordView {
  id: string;
  source: string;
  line: number;
  reference: string | null;
  partnerReference: string | null;
  amount: string | null;
  currency: string | null;
  executedAt: Date | null;
  runId: string;
  /** The report's other amount and currency for the row (e.g. the settlement amount), evidence only; null when none. */
  settlementAmount: string | null;
  settlementCurrency: string | null;
}

/** The reconciliation run that raised a discrepancy. */
export interface RunView {
  id: string;
  partner: string;
  source: string;
  /** running, succeeded, failed, dry_run or abandoned (its process died; see migration 0008). */
  status: string;
  startedAt: Date;
  finishedAt: Date | null;
  /** Why it failed or was abandoned; null otherwise. */
  error: string | null;
}

/** Everything finance needs to decide about one discrepancy. */
export interface DiscrepancyDetail extends DiscrepancySummary {
  attempt: number | null;
  details: Json;
  /** The intent with all its attempts, when the discrepancy concerns one. */
  intent: Intent | null;
  partnerRecords: PartnerRecordView[];
  /**
   * The partner's reversals (refunds, chargebacks) of the intent's executions, in id order: shown beside
   * them, never counted as executions. Empty when there are none or the discrepancy has no intent.
   */
  reversals: PartnerRecordView[];
  run: RunView | null;
  history: DiscrepancyHistoryEntry[];
}

/** Filters for listing; every field optional. */
export interface DiscrepancyFilter {
  status?: DiscrepancyStatus[];
  partner?: string[];
  kind?: DiscrepancyKind[];
  /** Only discrepancies created at or after this instant. */
  since?: Date;
  /** Free-text match on reference / partner reference. */
  search?: string;
  sort?: 'createdAt' | 'amountAtRisk' | 'partner' | 'kind' | 'status';
  direction?: 'asc' | 'desc';
  limit?: number;
  offset?: number;
}

/** Review actions and where they lead: `open -> acknowledged -> resolved | dismissed`. */
export type ReviewAction = 'acknowledge' | 'resolve' | 'dismiss';
