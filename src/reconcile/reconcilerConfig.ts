import type { ApiSourceConfig } from '../reports/apiSourceConfig.js';
import type { CsvSourceConfig } from '../reports/csvSourceConfig.js';
import type { Duration } from '../shared/duration.js';

/** How partner rows are paired with intents. */
export type MatchRule =
  /** Our reference, echoed by the partner (the usual case). */
  | { by: 'reference' }
  /** The partner's own id, known for intents completed by the caller. */
  | { by: 'partnerReference' }
  /**
   * For partners that echo nothing of ours: same currency, amount within `amountTolerance` (a decimal
   * string, compared exactly) and execution within `timeWindow` of the attempt's start. Each row and each
   * intent is paired at most once, nearest in time first.
   */
  | { by: 'amount'; amountTolerance?: string; timeWindow?: Duration };

/**
 * One partner's reconciliation, as written in `reconcilers/<partner>.ts` (default export). Field names are a
 * public contract: see README "Adding a partner".
 */
export interface ReconcilerConfig {
  /** Partner name, as used in `ledger.run({ partner })`. */
  partner: string;
  /** node-cron expression the worker runs this reconciler on, e.g. `'*\/15 * * * *'`. */
  schedule: string;
  /** IANA zone for the schedule and for report times without an offset. @default 'UTC' */
  timezone?: string;
  /** Look at `unknown` intents, and `in_progress` ones whose lease ended, this long ago. @default '15m' */
  stuckAfter?: Duration;
  /** The partner may take this long to show an execution in its reports. @default '2h' */
  settlementLag?: Duration;
  /** Past this age, a stuck intent nobody can prove either way is flagged `unresolved`. @default '3d' */
  deadline?: Duration;
  /** More rejected rows than this fraction of rows read fails the run, which then applies nothing. @default 0.01 */
  maxRejectedRatio?: number;
  /** How rows are paired with intents. @default { by: 'reference' } */
  match?: MatchRule;
  /**
   * The span of execution times the report is complete for. By default a CSV report covers from its
   * earliest to its latest execution time, and an API listing covers the window it was asked for.
   */
  coverage?: { from: string | Date; to: string | Date };
  /** Where the partner's report comes from. */
  source: CsvSourceConfig | ReconcilerApiSource;
}

/**
 * An API source as a reconciler uses it. `mode` says whether the partner's listing is read for a window
 * (`listing`) or each stuck intent's reference is asked about one by one (`lookup`, for partners without a
 * listing: settled intents are then not checked and orphans cannot be seen).
 * @default 'lookup' when the source has `lookup` and no listing `path`, else 'listing'
 */
export type ReconcilerApiSource = ApiSourceConfig & { mode?: 'listing' | 'lookup' };

/** Adds types to a reconciler module's default export; returns it unchanged. */
export function defineReconciler(config: ReconcilerConfig): ReconcilerConfig {
  return config;
}
