import type { CsvSourceConfig } from '../reports/csvSourceConfig.js';
import { toMilliseconds } from '../shared/duration.js';
import type { ReconcilerApiSource, ReconcilerConfig } from './reconcilerConfig.js';

/** How rows pair with intents, with its defaults applied. */
export type ResolvedMatch =
  | { by: 'reference' }
  | { by: 'partnerReference' }
  /** `amountTolerance` is a decimal string handed to SQL as numeric; never a JS number. */
  | { by: 'amount'; amountTolerance: string; timeWindowMs: number };

/** A {@link ReconcilerConfig} with every default applied and every value checked, before a run starts. */
export interface RunSettings {
  partner: string;
  timezone: string;
  stuckAfterMs: number;
  settlementLagMs: number;
  deadlineMs: number;
  maxRejectedRatio: number;
  match: ResolvedMatch;
  /** ISO strings, compared in PostgreSQL; undefined: from the report (CSV) or the requested window (API). */
  coverage: { from: string; to: string } | undefined;
  source:
    | { type: 'csv'; config: CsvSourceConfig }
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

  const rule = config.match ?? { by: 'reference' };
  let match: ResolvedMatch;
  if (rule.by === 'amount') {
    const amountTolerance = rule.amountTolerance ?? '0';
    if (typeof amountTolerance !== 'string' || !DECIMAL.test(amountTolerance)) {
      throw new RangeError(
        `${where}: match.amountTolerance must be a non-negative decimal string such as "0.01", got ${JSON.stringify(amountTolerance)}`,
      );
    }
    match = {
      by: 'amount',
      amountTolerance,
      timeWindowMs: toMilliseconds(rule.timeWindow ?? '10m', `${where}: match.timeWindow`),
    };
  } else if (rule.by === 'reference' || rule.by === 'partnerReference') {
    match = { by: rule.by };
  } else {
    throw new RangeError(`${where}: match.by must be "reference", "partnerReference" or "amount"`);
  }

  let coverage: RunSettings['coverage'];
  if (config.coverage) {
    const from = instant(config.coverage.from, `${where}: coverage.from`);
    const to = instant(config.coverage.to, `${where}: coverage.to`);
    if (Date.parse(from) > Date.parse(to))
      throw new RangeError(`${where}: coverage.from is after coverage.to`);
    coverage = { from, to };
  }

  const source = config.source;
  let resolvedSource: RunSettings['source'];
  if (source?.type === 'csv') {
    resolvedSource = { type: 'csv', config: source };
  } else if (source?.type === 'api') {
    const mode = source.mode ?? (source.lookup && !source.path ? 'lookup' : 'listing');
    if (mode !== 'listing' && mode !== 'lookup') {
      throw new RangeError(`${where}: source.mode must be "listing" or "lookup"`);
    }
    if (mode === 'lookup' && !source.lookup) {
      throw new RangeError(`${where}: source.mode is "lookup" but source.lookup is not configured`);
    }
    resolvedSource = { type: 'api', mode, config: source };
    // Lookups ask about one reference: the answer is paired on it, whatever the rule for listings.
    if (mode === 'lookup') match = { by: 'reference' };
  } else {
    throw new TypeError(`${where}: source.type must be "csv" or "api"`);
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
    source: resolvedSource,
  };
}

function instant(value: string | Date, what: string): string {
  const at = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(at.getTime()))
    throw new RangeError(`${what}: ${JSON.stringify(value)} is not a date-time`);
  return at.toISOString();
}
