import type { PartnerApiError } from './errors/PartnerApiError.js';
import { describe, getPath, type JsonValue } from './parseJsonKeepingNumbers.js';
import { redirectTarget } from './redirectTarget.js';

/**
 * The next page's address from a field of the answer (Twilio's `next_page_uri`): an absolute URL, or a
 * path resolved against the listing's origin; undefined when the field is missing, null or empty (the
 * last page). `listing` is the listing's first address; `bad` builds the error for an answer that cannot
 * be followed.
 */
export function nextPageUrl(
  body: JsonValue,
  field: string,
  listing: URL,
  bad: (what: string) => PartnerApiError,
): URL | undefined {
  const value = getPath(body, field);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    throw bad(
      `field ${field} is ${describe(value)}, expected an address or null: check pagination.nextField`,
    );
  }
  return sameListing(value, listing.origin, listing, bad);
}

/**
 * The `rel="next"` target of a `Link` header (RFC 8288), resolved against the page it came with;
 * undefined when there is none (the last page).
 */
export function nextFromLink(
  header: string | undefined,
  current: URL,
  listing: URL,
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
    if (relations.includes('next')) return sameListing(match[1]!, current.href, listing, bad);
  }
  return undefined;
}

/**
 * Credentials go to the listing only: a next page on another origin, or on the same origin but another path
 * (`/Accounts/<another account>/Messages.json`: a subaccount, a proxy's mix-up), is refused, never
 * followed. Another path would send our credentials where we never pointed them, and its items, which are
 * not this listing's, would complete our intents. Only the query (page number, token) may differ.
 */
function sameListing(
  address: string,
  resolvedAgainst: string,
  listing: URL,
  bad: (what: string) => PartnerApiError,
): URL {
  let url: URL;
  try {
    url = new URL(address, resolvedAgainst);
  } catch {
    throw bad(`the next page's address ${JSON.stringify(address.slice(0, 200))} is not a URL`);
  }
  if (url.origin !== listing.origin) {
    throw bad(
      `the next page is on ${url.origin}, not on the partner's ${listing.origin}: it is not followed`,
    );
  }
  if (url.pathname !== listing.pathname) {
    throw bad(
      `the next page is at ${redirectTarget(url.href, [])}, not on the listing's own path ` +
        `${listing.pathname}: it is not followed (its items would not be this listing's)`,
    );
  }
  return url;
}
