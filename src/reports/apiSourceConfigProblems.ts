import { amountConventionProblems } from './amountConvention.js';
import type { ResolvedApiSourceConfig } from './apiSourceConfig.js';
import { withoutQuery } from './errors/PartnerApiError.js';
import { CURRENCY } from './mapApiItem.js';
import { noSuchReferenceProblems } from './noSuchReference.js';
import { rowKindRuleProblems } from './rowKind.js';

/**
 * Everything wrong with a resolved API source that would make its listing or lookups nonsense, each as text;
 * empty when it is valid. The partner client refuses a source with any (PartnerApiError `config`).
 */
export function apiSourceConfigProblems(config: ResolvedApiSourceConfig): string[] {
  const problems: string[] = [];
  if (config.fields.reference === undefined && config.fields.partnerReference === undefined) {
    problems.push('fields must name reference or partnerReference (or both); rows could not be matched');
  }
  if (typeof config.fields.currency === 'object' && !CURRENCY.test(config.fields.currency.value.trim())) {
    problems.push(`fields.currency.value "${config.fields.currency.value}" is not a 3-letter ISO 4217 code`);
  }
  if (config.kind !== undefined) problems.push(...rowKindRuleProblems(config.kind, 'kind'));
  if (config.lookup?.notFound !== undefined)
    problems.push(...noSuchReferenceProblems(config.lookup.notFound, 'lookup.notFound'));
  const pagination = config.pagination;
  if (pagination.type === 'page' && pagination.total !== undefined) {
    const total: unknown = pagination.total;
    if (typeof total !== 'string' || total === '' || total.split('.').some((part) => part === ''))
      problems.push(
        'pagination.total must be a dot path to the count of items the answer declares, such as "total"',
      );
  }
  problems.push(...amountConventionProblems(config.amount, 'amount'));
  const amount = config.amount as Record<string, unknown> | undefined;
  if (amount?.sign !== undefined || amount?.debitCredit !== undefined) {
    problems.push('amount.sign and amount.debitCredit are for CSV reports; an API item carries its sign');
  }
  for (const [name, value, positive] of [
    ['timeoutMs', config.timeoutMs, true],
    ['retries', config.retries, false],
    ['retryBaseMs', config.retryBaseMs, false],
    ['maxBodyBytes', config.maxBodyBytes, true],
    ['maxPages', config.maxPages, true],
    ['listingTimeoutMs', config.listingTimeoutMs, true],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0 || (positive && value === 0)) {
      problems.push(`${name} must be a ${positive ? 'positive' : 'non-negative'} integer`);
    }
  }
  let base: URL | undefined;
  try {
    base = new URL(config.baseUrl);
  } catch {
    base = undefined;
  }
  if (!base || !/^https?:$/.test(base.protocol) || base.search || base.hash) {
    problems.push(
      `baseUrl "${withoutQuery(config.baseUrl)}" must be an absolute http(s) URL without query or fragment ` +
        '(fixed parameters go in query)',
    );
  }
  return problems;
}
