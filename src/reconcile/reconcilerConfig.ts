import type { ApiSourceConfig } from '../reports/apiSourceConfig.js';
import type { CsvSourceConfig } from '../reports/csvSourceConfig.js';
import type { FixedWidthSourceConfig } from '../reports/fixedWidthSourceConfig.js';
import type { Duration } from '../shared/duration.js';

/**
 * The form every value this partner reports in the matched field takes, as an anchored regular expression
 * (`^...$`) that PostgreSQL's `~` and JavaScript read alike: Twilio lists recipients in E.164
 * (`^(whatsapp:)?\\+[1-9][0-9]{1,14}$`). An intent whose value has another form (a number written
 * `11 98765-4321`) can never be matched by the partner's row, so its absence from a report proves nothing:
 * it stays stuck, the run's warnings count it, and past the deadline a person decides.
 */
export type ReferenceShape = string;

/** How partner rows are paired with intents. */
export type MatchRule =
  /** Our reference, echoed by the partner (the usual case). */
  | {
      by: 'reference';
      shape?: ReferenceShape;
      /**
       * Whether the partner's own reference names one execution for good. Cielo's NSU/DOC numbers a
       * transaction within its day and repeats: with `false`, a reversal or a failed try is tied to an
       * execution by our reference only (among those, one with its partner reference is still preferred),
       * and one without our reference is stored untied, with a warning, rather than tied to whichever
       * execution had that number first (a chargeback shown on another order).
       * @default true
       */
      partnerReferenceUnique?: boolean;
    }
  /** The partner's own id, known for intents completed by the caller. */
  | { by: 'partnerReference'; shape?: ReferenceShape }
  /**
   * For partners that echo nothing of ours: same currency, amount within `amountTolerance` (a decimal
   * string, compared exactly) and execution within `timeWindow` of the attempt's start. A row is paired only
   * when it fits exactly one intent (or its partner reference pins one); a row that fits several raises
   * `ambiguous_match` and decides none of them. `nearMiss` is the wider margin within which a row still
   * keeps an intent from being proven absent: a row a little outside the match rule may still be its
   * execution (a partner rounding, a partner clock a few minutes off).
   */
  | {
      by: 'amount';
      /** @default '0' */
      amountTolerance?: string;
      /** @default '10m' */
      timeWindow?: Duration;
      nearMiss?: {
        /** @default the larger of 10 x amountTolerance and 1% of the intent's amount */
        amountTolerance?: string;
        /** Widened by `clockSkew` when used: the partner dates in its own clock. @default 3 x timeWindow */
        timeWindow?: Duration;
      };
    };

/**
 * The period a report declares it is complete for. Only a declared period proves absence: the times of the
 * report's own rows never do (a cut or partial file, another partner's file, a row dated decades ahead
 * would all stretch it). Either fixed instants, or a date in the report file's name, read in the
 * reconciler's `timezone`: `{ fromFileName: { pattern: '(\\d{4}-\\d{2}-\\d{2})\\.csv$' } }` declares that
 * `2026-11-28.csv` is complete for 28 November from midnight, for `period`. API listings declare the window
 * they were asked for. A report may also declare its period itself (`{ fromReport: true }`). A declared
 * period never reaches past the run's own start.
 */
export type CoverageDeclaration =
  | { from: string | Date; to: string | Date }
  /**
   * The report says in its own contents which period it is complete for (PayPal's section header, Cielo's
   * file header): its source must be configured to read that declaration (a CSV source's
   * `records.coverage`). A report that declares nothing proves nothing absent, and the run warns.
   */
  | { fromReport: true }
  | {
      fromFileName: {
        /** A regular expression whose first capture group (or group named `date`) is the date. */
        pattern: string;
        /** Luxon tokens of the captured date. @default 'yyyy-MM-dd' */
        dateFormat?: string;
        /** How long from that date's midnight the file is complete for. @default '1d' */
        period?: Duration;
      };
    };

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
   * The period the report declares it is complete for (see {@link CoverageDeclaration}). An API listing
   * declares the window it was asked for. Without a declaration a CSV report still completes the intents it
   * shows, but proves none absent, and the run says so in its `warnings`.
   */
  coverage?: CoverageDeclaration;
  /**
   * A report none of whose rows match an intent of this partner, while intents exist in its period, looks
   * like another partner's file or the wrong day's, and proves nothing absent. Raise this to also distrust
   * reports with fewer matching rows than this share (e.g. 0.5), for partners whose files hold little else.
   * @default 0 (only a report with no matching row at all)
   */
  minMatchedShare?: number;
  /**
   * How far the partner's clock may be from ours. A row executed more than this before an intent was created
   * cannot be that intent's execution, which tells apart two intents sharing a reference. A report proves
   * absent only the intents started at least this long after its period's start, and this long plus the
   * settlement lag before its end: the partner dates in its clock. @default '15m'
   */
  clockSkew?: Duration;
  /** Where the partner's report comes from. */
  source: CsvSourceConfig | FixedWidthSourceConfig | ReconcilerApiSource;
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
