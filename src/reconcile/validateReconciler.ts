import { validate as validCron } from 'node-cron';
import { type CsvSourceConfig, csvSourceProblems } from '../reports/csvSourceConfig.js';
import { type FixedWidthSourceConfig, fixedWidthSourceProblems } from '../reports/fixedWidthSourceConfig.js';
import { rowKindRuleProblems } from '../reports/rowKind.js';
import { toMilliseconds } from '../shared/duration.js';
import { closestName } from './closestName.js';
import { ReconcilerConfigError } from './errors/ReconcilerConfigError.js';
import { KNOWN_KEYS, PAGINATION_TYPES } from './knownConfigKeys.js';
import type { ReconcilerConfig } from './reconcilerConfig.js';
import { shapeProblem } from './referenceShape.js';

type Problems = string[];

/**
 * Checks a reconciler module's default export whole, source included, and applies the documented defaults,
 * so a typo in a partner file fails when the file is loaded, with every problem of the file at once (field
 * named, unknown keys with the closest known one), not at 3 a.m. in the middle of a run.
 * @throws ReconcilerConfigError listing every problem
 */
export function validateReconciler(value: unknown, file: string): ReconcilerConfig {
  if (!isObject(value))
    throw new ReconcilerConfigError(file, [
      'default export must be a reconciler object (export default defineReconciler({...}))',
    ]);
  const problems: Problems = [];
  const config = value as unknown as ReconcilerConfig;
  unknownKeys(value, KNOWN_KEYS.top, '', problems);
  if (typeof config.partner !== 'string' || !config.partner)
    problems.push('partner must be a non-empty string');
  if (typeof config.schedule !== 'string' || !validCron(config.schedule)) {
    problems.push(
      `schedule must be a node-cron expression such as "*/15 * * * *" (got ${JSON.stringify(config.schedule)})`,
    );
  }
  const timezone = config.timezone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    problems.push(`timezone "${timezone}" is not an IANA time zone such as "America/Sao_Paulo"`);
  }
  for (const field of ['stuckAfter', 'settlementLag', 'deadline'] as const) {
    if (config[field] !== undefined) duration(config[field], field, problems);
  }
  const ratio = config.maxRejectedRatio ?? 0.01;
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1))
    problems.push(`maxRejectedRatio must be a number from 0 to 1 (got ${JSON.stringify(ratio)})`);
  const match = config.match ?? { by: 'reference' };
  if (!isObject(match)) problems.push('match must be an object such as { by: "reference" }');
  else {
    unknownKeys(match, KNOWN_KEYS.match, 'match.', problems);
    if (!['reference', 'partnerReference', 'amount'].includes(match.by))
      problems.push(
        `match.by must be "reference", "partnerReference" or "amount" (got ${JSON.stringify(match.by)})`,
      );
    const shape = (match as { shape?: unknown }).shape;
    if (shape !== undefined) {
      if (match.by === 'amount')
        problems.push('match.shape applies to matching by reference or partnerReference');
      else {
        const problem = shapeProblem(shape);
        if (problem) problems.push(problem);
      }
    }
    const unique = (match as { partnerReferenceUnique?: unknown }).partnerReferenceUnique;
    if (unique !== undefined) {
      if (typeof unique !== 'boolean')
        problems.push(`match.partnerReferenceUnique must be true or false (got ${JSON.stringify(unique)})`);
      else if (match.by !== 'reference')
        problems.push('match.partnerReferenceUnique applies to matching by reference');
    }
    if (match.by === 'amount' && match.timeWindow !== undefined)
      duration(match.timeWindow, 'match.timeWindow', problems);
    if (match.by === 'amount' && match.nearMiss !== undefined) {
      if (!isObject(match.nearMiss))
        problems.push('match.nearMiss must be { amountTolerance?, timeWindow? }');
      else {
        unknownKeys(match.nearMiss, KNOWN_KEYS.nearMiss, 'match.nearMiss.', problems);
        if (match.nearMiss.timeWindow !== undefined)
          duration(match.nearMiss.timeWindow, 'match.nearMiss.timeWindow', problems);
      }
    }
  }
  const share = config.minMatchedShare ?? 0;
  if (typeof share !== 'number' || !(share >= 0 && share <= 1))
    problems.push(`minMatchedShare must be a number from 0 to 1 (got ${JSON.stringify(share)})`);
  if (config.clockSkew !== undefined) duration(config.clockSkew, 'clockSkew', problems);
  if (config.coverage !== undefined) coverageProblems(config.coverage, config.source, problems);
  sourceProblems(config.source, problems);
  if (isObject(config.source) && config.source.kind !== undefined)
    problems.push(...rowKindRuleProblems(config.source.kind, 'source.kind'));
  if (problems.length > 0) throw new ReconcilerConfigError(file, problems);
  return {
    ...config,
    timezone,
    stuckAfter: config.stuckAfter ?? '15m',
    settlementLag: config.settlementLag ?? '2h',
    deadline: config.deadline ?? '3d',
    maxRejectedRatio: ratio,
    match,
  };
}

function sourceProblems(source: unknown, problems: Problems): void {
  if (!isObject(source) || !['csv', 'fixedWidth', 'api'].includes(source.type as string)) {
    problems.push('source.type must be "csv", "fixedWidth" or "api"');
    return;
  }
  if (source.type === 'fixedWidth') {
    fixedWidthProblems(source, problems);
    return;
  }
  if (source.type === 'csv') {
    unknownKeys(source, KNOWN_KEYS.csv, 'source.', problems);
    let stringsOk = true;
    if (typeof source.path !== 'string' || source.path.trim() === '')
      problems.push('source.path must be a file path or glob such as "reports/acme-pay/*.csv"');
    for (const field of [
      'delimiter',
      'quote',
      'decimalSeparator',
      'thousandsSeparator',
      'dateFormat',
      'encoding',
    ]) {
      if (source[field] !== undefined && typeof source[field] !== 'string') {
        problems.push(`source.${field} must be a string (got ${JSON.stringify(source[field])})`);
        stringsOk = false;
      }
    }
    if (!isObject(source.columns)) {
      problems.push('source.columns must map report headers, such as { reference: "ORDER" }');
    } else unknownKeys(source.columns, KNOWN_KEYS.columns, 'source.columns.', problems);
    if (isObject(source.account))
      unknownKeys(source.account, KNOWN_KEYS.account, 'source.account.', problems);
    if (isObject(source.records)) {
      const records = source.records;
      unknownKeys(records, KNOWN_KEYS.records, 'source.records.', problems);
      if (isObject(records.coverage))
        unknownKeys(records.coverage, KNOWN_KEYS.recordsCoverage, 'source.records.coverage.', problems);
      if (Array.isArray(records.counts))
        records.counts.forEach((count: unknown, index: number) => {
          if (isObject(count))
            unknownKeys(count, KNOWN_KEYS.recordsCount, `source.records.counts[${index}].`, problems);
        });
    }
    // The separators' rules need strings to compare.
    if (!stringsOk) return;
    // Without columns, the rest of the source is still checked (a placeholder stands in for them).
    const checked = isObject(source.columns) ? source : { ...source, columns: { reference: 'placeholder' } };
    problems.push(
      ...csvSourceProblems(checked as unknown as CsvSourceConfig).map((problem) => `source.${problem}`),
    );
    return;
  }
  unknownKeys(source, KNOWN_KEYS.api, 'source.', problems);
  if (source.mode !== undefined && source.mode !== 'listing' && source.mode !== 'lookup')
    problems.push(`source.mode must be "listing" or "lookup" (got ${JSON.stringify(source.mode)})`);
  if (
    typeof source.baseUrl !== 'string' ||
    !/^https?:\/\//.test(source.baseUrl) ||
    !URL.canParse(source.baseUrl)
  )
    problems.push(`source.baseUrl must be an http(s) URL (got ${JSON.stringify(source.baseUrl)})`);
  if (typeof source.path !== 'string' || !source.path.startsWith('/'))
    problems.push(`source.path must be a URL path starting with "/" (got ${JSON.stringify(source.path)})`);
  if (!isObject(source.fields))
    problems.push('source.fields must map item fields, such as { reference: "order_id" }');
  else {
    unknownKeys(source.fields, KNOWN_KEYS.fields, 'source.fields.', problems);
    if (source.fields.reference === undefined && source.fields.partnerReference === undefined)
      problems.push(
        'source.fields must map reference or partnerReference, or items cannot be matched to intents',
      );
  }
  for (const part of ['auth', 'window', 'lookup'] as const) {
    const value = source[part];
    if (value === undefined) continue;
    if (!isObject(value)) problems.push(`source.${part} must be an object`);
    else unknownKeys(value, KNOWN_KEYS[part], `source.${part}.`, problems);
  }
  if (isObject(source.auth) && isObject(source.auth.basic)) {
    unknownKeys(source.auth.basic, KNOWN_KEYS.basic, 'source.auth.basic.', problems);
    for (const name of ['usernameEnv', 'passwordEnv'] as const) {
      if (typeof source.auth.basic[name] !== 'string' || source.auth.basic[name] === '')
        problems.push(`source.auth.basic.${name} must name the environment variable holding it`);
    }
  } else if (isObject(source.auth) && (typeof source.auth.env !== 'string' || source.auth.env === ''))
    problems.push('source.auth.env must name the environment variable holding the credential');
  const pagination = source.pagination;
  if (pagination !== undefined) {
    const type = isObject(pagination) ? (pagination.type as (typeof PAGINATION_TYPES)[number]) : undefined;
    if (!type || !PAGINATION_TYPES.includes(type))
      problems.push(
        `source.pagination.type must be one of ${PAGINATION_TYPES.map((t) => `"${t}"`).join(', ')}`,
      );
    else unknownKeys(pagination as Record<string, unknown>, KNOWN_KEYS[type], 'source.pagination.', problems);
  }
}

/** A fixed-width source: unknown keys at every level, then what fixedWidthSourceProblems finds. */
function fixedWidthProblems(source: Record<string, unknown>, problems: Problems): void {
  unknownKeys(source, KNOWN_KEYS.fixedWidth, 'source.', problems);
  if (typeof source.path !== 'string' || source.path.trim() === '')
    problems.push('source.path must be a file path or glob such as "reports/cielo/*.txt"');
  const fields = (list: unknown, where: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((field, index) => {
      if (isObject(field)) unknownKeys(field, KNOWN_KEYS.fixedWidthField, `${where}[${index}].`, problems);
    });
  };
  if (isObject(source.recordType))
    unknownKeys(source.recordType, ['name', 'start', 'length'], 'source.recordType.', problems);
  if (isObject(source.header)) {
    unknownKeys(source.header, KNOWN_KEYS.fixedWidthHeader, 'source.header.', problems);
    fields(source.header.fields, 'source.header.fields');
  }
  if (isObject(source.trailer)) {
    unknownKeys(source.trailer, KNOWN_KEYS.fixedWidthTrailer, 'source.trailer.', problems);
    if (isObject(source.trailer.count))
      unknownKeys(source.trailer.count, KNOWN_KEYS.fixedWidthField, 'source.trailer.count.', problems);
  }
  if (isObject(source.records)) {
    for (const [type, layout] of Object.entries(source.records)) {
      const where = `source.records[${JSON.stringify(type)}]`;
      if (!isObject(layout)) continue;
      unknownKeys(layout, KNOWN_KEYS.fixedWidthRecord, `${where}.`, problems);
      fields(layout.fields, `${where}.fields`);
      if (isObject(layout.columns))
        unknownKeys(layout.columns, KNOWN_KEYS.fixedWidthColumns, `${where}.columns.`, problems);
      if (isObject(layout.inherit))
        unknownKeys(layout.inherit, KNOWN_KEYS.fixedWidthInherit, `${where}.inherit.`, problems);
      if (isObject(layout.executedAt))
        unknownKeys(layout.executedAt, KNOWN_KEYS.executedAt, `${where}.executedAt.`, problems);
    }
  }
  try {
    problems.push(
      ...fixedWidthSourceProblems(source as unknown as FixedWidthSourceConfig).map(
        (problem) => `source.${problem}`,
      ),
    );
  } catch (error) {
    // A shape so far off that the checks themselves cannot walk it: the keys named above say why.
    problems.push(`source: ${(error as Error).message}`);
  }
}

function coverageProblems(coverage: unknown, source: unknown, problems: Problems): void {
  if (!isObject(coverage)) {
    problems.push('coverage must be { from, to }, { fromFileName: { pattern } } or { fromReport: true }');
    return;
  }
  if ('fromReport' in coverage) {
    unknownKeys(coverage, ['fromReport'], 'coverage.', problems);
    if (coverage.fromReport !== true)
      problems.push('coverage.fromReport must be true (leave coverage out to declare none)');
    const problem = isObject(source) ? fromReportSourceProblem(source) : undefined;
    if (problem) problems.push(problem);
    return;
  }
  if ('fromFileName' in coverage) {
    const declared = coverage.fromFileName;
    unknownKeys(coverage, ['fromFileName'], 'coverage.', problems);
    if (!isObject(declared)) {
      problems.push('coverage.fromFileName must be { pattern, dateFormat?, period? }');
      return;
    }
    unknownKeys(declared, KNOWN_KEYS.fromFileName, 'coverage.fromFileName.', problems);
    if (typeof declared.pattern !== 'string' || declared.pattern === '')
      problems.push('coverage.fromFileName.pattern must be a regular expression as a string');
    else {
      try {
        new RegExp(declared.pattern);
      } catch (error) {
        problems.push(`coverage.fromFileName.pattern: ${(error as Error).message}`);
      }
    }
    if (declared.period !== undefined) duration(declared.period, 'coverage.fromFileName.period', problems);
    return;
  }
  unknownKeys(coverage, KNOWN_KEYS.coverage, 'coverage.', problems);
  for (const end of ['from', 'to'] as const) {
    const value = coverage[end];
    const time =
      value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(time))
      problems.push(`coverage.${end} must be a date or an ISO 8601 instant (got ${JSON.stringify(value)})`);
  }
}

/**
 * `{ fromReport: true }` needs a source that reads a declaration from the report; one that cannot would
 * leave every run without coverage, which is better said when the file is loaded. An API listing declares
 * the window it was asked for. Sources of other types say themselves what they declare.
 */
function fromReportSourceProblem(source: Record<string, unknown>): string | undefined {
  if (source.type === 'api') {
    return 'coverage.fromReport: an API listing declares the window it was asked for; leave coverage out';
  }
  if (source.type === 'csv') {
    const records = isObject(source.records) ? source.records : undefined;
    const coverage = isObject(records?.coverage) ? records.coverage : undefined;
    if (!coverage) {
      return "coverage.fromReport needs source.records.coverage: the record that declares the period (such as PayPal's SH)";
    }
    // A declaration is only as good as the proof that what follows it is whole: a file cut after its
    // section header would otherwise prove absent everything that was cut.
    const counts = Array.isArray(records?.counts) ? (records.counts as unknown[]).filter(isObject) : [];
    const closesSection = counts.some((count) => count.since === coverage.record);
    const countsFile = records?.end !== undefined && counts.some((count) => count.since === undefined);
    if (!closesSection && !countsFile) {
      return `coverage.fromReport needs a record that proves the declared part whole: a count since ${JSON.stringify(coverage.record)} in source.records.counts (such as PayPal's SC), or an end record and a whole-file count (source.records.end and counts)`;
    }
  }
  if (source.type === 'fixedWidth') {
    if (!(isObject(source.header) && source.header.period !== undefined)) {
      return 'coverage.fromReport needs source.header.period: the header fields that declare the period';
    }
    if (source.trailer === undefined) {
      return 'coverage.fromReport needs source.trailer with its count: without it a file cut short still declares its whole period';
    }
  }
  return undefined;
}

function duration(value: unknown, field: string, problems: Problems): void {
  try {
    toMilliseconds(value as never, field);
  } catch (error) {
    problems.push(`${field} ${(error as Error).message.replace(`${field}: `, '')}`);
  }
}

/** Names each key of `value` that is not in `known`, with the closest known one when it looks like a typo. */
function unknownKeys(
  value: Record<string, unknown>,
  known: readonly string[],
  prefix: string,
  problems: Problems,
): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const closest = closestName(key, known);
    problems.push(
      `${prefix}${key} is not a known setting${closest ? ` (did you mean ${prefix}${closest}?)` : ''}; known: ${known.join(', ')}`,
    );
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
