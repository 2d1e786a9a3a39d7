import { validate as validCron } from 'node-cron';
import { rowKindRuleProblems } from '../reports/rowKind.js';
import { toMilliseconds } from '../shared/duration.js';
import type { ReconcilerConfig } from './reconcilerConfig.js';

/**
 * Checks a reconciler module's default export and applies the documented defaults, so a typo in a partner
 * file fails at load time with the file and field named, not at 3 a.m. in the middle of a run.
 */
export function validateReconciler(value: unknown, file: string): ReconcilerConfig {
  const fail = (field: string, problem: string): never => {
    throw new TypeError(`${file}: ${field} ${problem}`);
  };
  if (typeof value !== 'object' || value === null)
    fail('default export', 'must be a reconciler object (defineReconciler({...}))');
  const config = value as ReconcilerConfig;
  if (typeof config.partner !== 'string' || !config.partner) fail('partner', 'must be a non-empty string');
  if (typeof config.schedule !== 'string' || !validCron(config.schedule)) {
    fail(
      'schedule',
      `must be a node-cron expression such as "*/15 * * * *" (got ${JSON.stringify(config.schedule)})`,
    );
  }
  const timezone = config.timezone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    fail('timezone', `"${timezone}" is not an IANA time zone such as "America/Sao_Paulo"`);
  }
  for (const field of ['stuckAfter', 'settlementLag', 'deadline'] as const) {
    if (config[field] !== undefined) {
      try {
        toMilliseconds(config[field], field);
      } catch (error) {
        fail(field, (error as Error).message.replace(`${field}: `, ''));
      }
    }
  }
  const ratio = config.maxRejectedRatio ?? 0.01;
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1))
    fail('maxRejectedRatio', 'must be a number from 0 to 1');
  const match = config.match ?? { by: 'reference' };
  if (!['reference', 'partnerReference', 'amount'].includes(match.by)) {
    fail('match.by', 'must be "reference", "partnerReference" or "amount"');
  }
  if (!config.source || (config.source.type !== 'csv' && config.source.type !== 'api')) {
    fail('source.type', 'must be "csv" or "api"');
  }
  if (config.source.kind !== undefined) {
    const problems = rowKindRuleProblems(config.source.kind, 'source.kind');
    if (problems.length > 0) throw new TypeError(`${file}: ${problems.join('; ')}`);
  }
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
