import { withoutQuery } from './errors/PartnerApiError.js';
import { redactSecrets } from './redactSecrets.js';

/**
 * Where a redirect points, safe to quote in an error: origin and path only (no query, no `user:pass@`),
 * our own secrets (token, Basic credentials, baseUrl's too; raw, escaped or percent-encoded: redactSecrets)
 * replaced wherever they appear, every path segment long enough to be a credential (signed download links,
 * tokens in paths: 16 characters or more) shown as `[redacted]`, and 200 characters at most.
 */
export function redirectTarget(location: string, secrets: readonly string[]): string {
  const bare = withoutQuery(redactSecrets(location, secrets));
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
