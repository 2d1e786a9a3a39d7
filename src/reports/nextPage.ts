import type { PartnerApiError } from './errors/PartnerApiError.js';
import { describe, getPath, type JsonValue } from './parseJsonKeepingNumbers.js';

/**
 * The next page's address from a field of the answer (Twilio's `next_page_uri`): an absolute URL, or a
 * path resolved against the origin of `baseUrl`; undefined when the field is missing, null or empty (the
 * last page). `bad` builds the error for an answer that cannot be followed.
 */
export function nextPageUrl(
  body: JsonValue,
  field: string,
  baseUrl: string,
  bad: (what: string) => PartnerApiError,
): URL | undefined {
  const value = getPath(body, field);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    throw bad(
      `field ${field} is ${describe(value)}, expected an address or null: check pagination.nextField`,
    );
  }
  return sameOrigin(value, baseUrl, bad);
}

/**
 * The `rel="next"` target of a `Link` header (RFC 8288), resolved against the page it came with;
 * undefined when there is none (the last page).
 */
export function nextFromLink(
  header: string | undefined,
  current: URL,
  baseUrl: string,
  bad: (what: string) => PartnerApiError,
): URL | undefined {
  if (header === undefined) return undefined;
  // link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param ); several separated by commas. A comma
  // may appear inside the <...> of a target, so values are matched, not split.
  const linkValue = /<([^>]*)>((?:\s*;\s*[^;,]+)*)/g;
  for (const match of header.matchAll(linkValue)) {
    const params = match[2] ?? '';
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params);
    const relations = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (relations.includes('next')) return sameOrigin(new URL(match[1]!, current).href, baseUrl, bad);
  }
  return undefined;
}

/** Credentials go to the partner's origin only: a next page elsewhere is refused, never followed. */
function sameOrigin(address: string, baseUrl: string, bad: (what: string) => PartnerApiError): URL {
  const base = new URL(baseUrl);
  let url: URL;
  try {
    url = new URL(address, base.origin);
  } catch {
    throw bad(`the next page's address ${JSON.stringify(address.slice(0, 200))} is not a URL`);
  }
  if (url.origin !== base.origin) {
    throw bad(`the next page is on ${url.origin}, not on the partner's ${base.origin}: it is not followed`);
  }
  return url;
}
