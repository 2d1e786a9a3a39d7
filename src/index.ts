/**
 * intent-ledger: call partners that cannot deduplicate, exactly once, from at-least-once consumers.
 * Public API; everything else is internal.
 */
export { type Classification, type Classifier, defaultClassify } from './classify.js';
export { createLedger } from './createLedger.js';
export type { Duration } from './duration.js';
export * from './errors/index.js';
export type { InboxResult } from './inbox.js';
export { LeaseEndingError } from './leaseEndingError.js';
export { Ledger } from './ledger.js';
export type { Logger } from './logger.js';
export type { LedgerMetrics } from './metrics.js';
export type { LedgerOptions } from './options.js';
export type { PurgeOptions, PurgeResult } from './purge.js';
export {
  type ReconcileOptions,
  type RunProgress,
  type RunReport,
  reconcile,
} from './reconcile/reconcile.js';
export { defineReconciler, type MatchRule, type ReconcilerConfig } from './reconcile/reconcilerConfig.js';
export { DiscrepancyKind, DiscrepancyStatus, IntentStatus } from './status.js';
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
} from './types.js';
export { Workflow } from './workflow.js';
