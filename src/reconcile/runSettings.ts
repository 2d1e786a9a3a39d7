import Decimal from 'decimal.js';
import type { CsvSourceConfig } from '../reports/csvSourceConfig.js';
import type { FixedWidthSourceConfig } from '../reports/fixedWidthSourceConfig.js';
import { toMilliseconds } from '../shared/duration.js';
import type { CoverageDeclaration, ReconcilerApiSource, ReconcilerConfig } from './reconcilerConfig.js';
import { shapeProblem } from './referenceShape.js';

/** How rows pair with intents, with its defaults applied. */
export type ResolvedMatch =
  /**
   * `shape`: MatchRule's, checked (anchored, a valid regular expression). `partnerReferenceUnique` only when
   * configured `false` (see MatchRule).
   */
  | { by: 'reference'; shape?: string; partnerReferenceUnique?: false }
  | { by: 'partnerReference'; shape?: string }
  /**
   * Decimal strings are handed to SQL as numeric, never JS numbers. `nearMissAmount` null: the default (the
   * larger of 10 x amountTolerance and 1% of the intent's amount).
   */
  | {
      by: 'amount';
      amountTolerance: string;
      timeWindowMs: number;
      nearMissAmount: string | null;
      /** The configured near-miss window (default 3 x timeWindow) plus clockSkew. */
      nearMissWindowMs: number;
    };

/** What the report declares it is complete for, checked; see CoverageDeclaration. */
export type DeclaredCoverage =
  | { type: 'fixed'; from: string; to: string }
  | { type: 'fileName'; pattern: RegExp; dateFormat: string; periodMs: number }
  /** What the report's own contents declare (ReportItem `declaration`), known once it has been read. */
  | { type: 'report' };

/** A {@link ReconcilerConfig} with every default applied and every value checked, before a run starts. */
export interface RunSettings {
  partner: string;
  timezone: string;
  stuckAfterMs: number;
  settlementLagMs: number;
  deadlineMs: number;
  maxRejectedRatio: number;
  match: ResolvedMatch;
  /** undefined: an API listing declares the window it was asked for; a CSV report declares nothing. */
  coverage: DeclaredCoverage | undefined;
  minMatchedShare: number;
  clockSkewMs: number;
  source:
    | { type: 'csv'; config: CsvSourceConfig }
    | { type: 'fixedWidth'; config: FixedWidthSourceConfig }
    | { type: 'api'; mode: 'listing' | 'lookup'; config: ReconcilerApiSource };
}

const DECIMAL = /^\d{1,20}(\.\d{1,10})?$/;

/** Applies the documented defaults; a bad value is the operator's mistake and throws naming the field. */
export function resolveRunSettings(config: ReconcilerConfig): RunSettings {
  const where = `reconciler ${config.partner}`;
  if (typeof config.partner !== 'string' || config.partner === '') {
    throw new TypeError('reconciler: partner must be a non-empty string');
  }
  const maxRejectedRatio = config.maxRejectedRatio ?? 0.01;
  if (typeof maxRejectedRatio !== 'number' || !(maxRejectedRatio >= 0 && maxRejectedRatio <= 1)) {
    throw new RangeError(`${where}: maxRejectedRatio must be a number from 0 to 1, got ${maxRejectedRatio}`);
  }

  const clockSkewMs = toMilliseconds(config.clockSkew ?? '15m', `${where}: clockSkew`);
  const rule = config.match ?? { by: 'reference' };
  let match: ResolvedMatch;
  if (rule.by === 'amount') {
    const amountTolerance = rule.amountTolerance ?? '0';
    if (typeof amountTolerance !== 'string' || !DECIMAL.test(amountTolerance)) {
      throw new RangeError(
        `${where}: match.amountTolerance must be a non-negative decimal string such as "0.01", got ${JSON.stringify(amountTolerance)}`,
      );
    }
    const timeWindowMs = toMilliseconds(rule.timeWindow ?? '10m', `${where}: match.timeWindow`);
    const nearMissAmount = rule.nearMiss?.amountTolerance ?? null;
    if (nearMissAmount !== null && (typeof nearMissAmount !== 'string' || !DECIMAL.test(nearMissAmount))) {
      throw new RangeError(
        `${where}: match.nearMiss.amountTolerance must be a non-negative decimal string such as "1.00", got ${JSON.stringify(nearMissAmount)}`,
      );
    }
    if (nearMissAmount !== null && new Decimal(nearMissAmount).lessThan(amountTolerance)) {
      throw new RangeError(
        `${where}: match.nearMiss.amountTolerance must not be below match.amountTolerance`,
      );
    }
    const nearMissWindowMs =
      rule.nearMiss?.timeWindow === undefined
        ? 3 * timeWindowMs
        : toMilliseconds(rule.nearMiss.timeWindow, `${where}: match.nearMiss.timeWindow`);
    if (nearMissWindowMs < timeWindowMs) {
      throw new RangeError(`${where}: match.nearMiss.timeWindow must not be shorter than match.timeWindow`);
    }
    // Widened by the clock skew: the partner dates an execution in its own clock, up to clockSkew from ours,
    // so a row that far further from the attempt's start may still be its execution. Every use (the
    // candidates and ambiguity of matchReportByAmount, the near-miss test of collectCandidates) reads this.
    match = {
      by: 'amount',
      amountTolerance,
      timeWindowMs,
      nearMissAmount,
      nearMissWindowMs: nearMissWindowMs + clockSkewMs,
    };
  } else if (rule.by === 'reference' || rule.by === 'partnerReference') {
    const problem = rule.shape === undefined ? undefined : shapeProblem(rule.shape);
    if (problem) throw new RangeError(`${where}: ${problem}`);
    match = rule.shape === undefined ? { by: rule.by } : { by: rule.by, shape: rule.shape };
    if (rule.by === 'reference' && rule.partnerReferenceUnique !== undefined) {
      if (typeof rule.partnerReferenceUnique !== 'boolean') {
        throw new RangeError(`${where}: match.partnerReferenceUnique must be true or false`);
      }
      if (!rule.partnerReferenceUnique) match = { ...match, by: 'reference', partnerReferenceUnique: false };
    }
  } else {
    throw new RangeError(`${where}: match.by must be "reference", "partnerReference" or "amount"`);
  }

  const coverage = config.coverage === undefined ? undefined : declaredCoverage(config.coverage, where);
  const minMatchedShare = config.minMatchedShare ?? 0;
  if (typeof minMatchedShare !== 'number' || !(minMatchedShare >= 0 && minMatchedShare <= 1)) {
    throw new RangeError(`${where}: minMatchedShare must be a number from 0 to 1, got ${minMatchedShare}`);
  }

  const source = config.source;
  let resolvedSource: RunSettings['source'];
  if (source?.type === 'csv') {
    resolvedSource = { type: 'csv', config: source };
  } else if (source?.type === 'fixedWidth') {
    resolvedSource = { type: 'fixedWidth', config: source };
  } else if (source?.type === 'api') {
    const mode = source.mode ?? (source.lookup && !source.path ? 'lookup' : 'listing');
    if (mode !== 'listing' && mode !== 'lookup') {
      throw new RangeError(`${where}: source.mode must be "listing" or "lookup"`);
    }
    if (mode === 'lookup' && !source.lookup) {
      throw new RangeError(`${where}: source.mode is "lookup" but source.lookup is not configured`);
    }
    resolvedSource = { type: 'api', mode, config: source };
    // Lookups ask about one reference: the answer is paired on it, whatever the rule for listings. Its
    // shape, if the rule gives one for references, still holds: an answer about a reference written in
    // another form than the partner's says nothing.
    if (mode === 'lookup')
      match =
        match.by === 'reference' && match.shape !== undefined
          ? { by: 'reference', shape: match.shape }
          : { by: 'reference' };
  } else {
    throw new TypeError(`${where}: source.type must be "csv", "fixedWidth" or "api"`);
  }

  return {
    partner: config.partner,
    timezone: config.timezone ?? 'UTC',
    stuckAfterMs: toMilliseconds(config.stuckAfter ?? '15m', `${where}: stuckAfter`),
    settlementLagMs: toMilliseconds(config.settlementLag ?? '2h', `${where}: settlementLag`),
    deadlineMs: toMilliseconds(config.deadline ?? '3d', `${where}: deadline`),
    maxRejectedRatio,
    match,
    coverage,
    minMatchedShare,
    clockSkewMs,
    source: resolvedSource,
  };
}

function declaredCoverage(declaration: CoverageDeclaration, where: string): DeclaredCoverage {
  if ('fromReport' in declaration) {
    if (declaration.fromReport !== true) {
      throw new TypeError(`${where}: coverage.fromReport must be true (leave coverage out to declare none)`);
    }
    return { type: 'report' };
  }
  if ('fromFileName' in declaration) {
    const { pattern, dateFormat = 'yyyy-MM-dd', period = '1d' } = declaration.fromFileName ?? {};
    if (typeof pattern !== 'string' || pattern === '') {
      throw new TypeError(`${where}: coverage.fromFileName.pattern must be a regular expression as a string`);
    }
    let compiled: RegExp;
    try {
      compiled = new RegExp(pattern);
    } catch (error) {
      throw new RangeError(`${where}: coverage.fromFileName.pattern: ${(error as Error).message}`);
    }
    const periodMs = toMilliseconds(period, `${where}: coverage.fromFileName.period`);
    if (periodMs <= 0) throw new RangeError(`${where}: coverage.fromFileName.period must be longer than 0`);
    return { type: 'fileName', pattern: compiled, dateFormat, periodMs };
  }
  const from = instant(declaration.from, `${where}: coverage.from`);
  const to = instant(declaration.to, `${where}: coverage.to`);
  if (Date.parse(from) > Date.parse(to)) throw new RangeError(`${where}: coverage.from is after coverage.to`);
  return { type: 'fixed', from, to };
}

function instant(value: string | Date, what: string): string {
  const at = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(at.getTime()))
    throw new RangeError(`${what}: ${JSON.stringify(value)} is not a date-time`);
  return at.toISOString();
}
