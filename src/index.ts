/**
 * intent-ledger: call partners that cannot deduplicate, exactly once, from at-least-once consumers.
 * Public API; everything else is internal.
 */

export {
  type ApprovalThreshold,
  currentApprovalThresholds,
  setApprovalThreshold,
} from './discrepancies/approvalThresholds.js';
export type { ClaimOrderMode } from './ledger/claimOrder.js';
export { type Classification, type Classifier, defaultClassify } from './ledger/classify.js';
export { createLedger } from './ledger/createLedger.js';
export type { InboxResult } from './ledger/inbox.js';
export { Ledger } from './ledger/ledger.js';
export type { LedgerMetrics } from './ledger/metrics.js';
export type { LedgerOptions } from './ledger/options.js';
export type { PurgeOptions, PurgeResult } from './ledger/purge.js';
export { Workflow } from './ledger/workflow.js';
export {
  type ReconcileOptions,
  type ReconciliationResult,
  type RunProgress,
  /** @deprecated The old name of {@link ReconciliationResult}. */
  type RunReport,
  reconcile,
} from './reconcile/reconcile.js';
export {
  defineReconciler,
  type MatchRule,
  type ReconcilerConfig,
  type ReferenceShape,
} from './reconcile/reconcilerConfig.js';
export { ReconciliationWorker, type WorkerOptions } from './reconcile/reconciliationWorker.js';
export { createReviewServer, type ReviewServerOptions } from './review/createReviewServer.js';
export type { Duration } from './shared/duration.js';
export * from './shared/errors/index.js';
export { LeaseEndingError } from './shared/errors/LeaseEndingError.js';
export type { Logger } from './shared/logger.js';
export { DiscrepancyKind, DiscrepancyStatus, IntentStatus } from './shared/status.js';
export type {
  Attempt,
  CallContext,
  CallResult,
  Claim,
  Intent,
  IntentSpec,
  Json,
  PartnerCall,
  Replay,
  RunResult,
} from './shared/types.js';
