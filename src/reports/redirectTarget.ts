import { withoutQuery } from './errors/PartnerApiError.js';

/**
 * Where a redirect points, safe to quote in an error: origin and path only (no query, no `user:pass@`),
 * our own secrets (token, Basic credentials) replaced wherever they appear, every path segment long enough
 * to be a credential (signed download links, tokens in paths: 16 characters or more) shown as `[redacted]`,
 * and 200 characters at most.
 */
export function redirectTarget(location: string, secrets: readonly string[]): string {
  let unredacted = location;
  for (const secret of secrets) if (secret) unredacted = unredacted.split(secret).join('[redacted]');
  const bare = withoutQuery(unredacted);
  const at = bare.indexOf('://');
  const pathStart = at === -1 ? 0 : bare.indexOf('/', at + 3);
  const head = pathStart === -1 ? bare : bare.slice(0, pathStart);
  const path = pathStart === -1 ? '' : bare.slice(pathStart);
  const safe = `${head}${path
    .split('/')
    .map((segment) => (segment.length >= 16 ? '[redacted]' : segment))
    .join('/')}`;
  return safe.length > 200 ? `${safe.slice(0, 200)}...` : safe;
}
