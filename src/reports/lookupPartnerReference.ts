import { type ApiSourceConfig, resolveApiSourceConfig } from './apiSourceConfig.js';
import { itemsOf } from './itemsOf.js';
import { joinUrl } from './joinUrl.js';
import { mapApiItem } from './mapApiItem.js';
import { createPartnerClient } from './partnerClient.js';
import type { PartnerRow, RejectedRow } from './partnerRow.js';
import type { ApiReadOptions } from './readApiReport.js';

/**
 * Asks the partner about one reference, for partners that offer no listing (or to double-check one intent).
 * Rows come back with `line` = position in the answer. A 404 means the partner says it never executed it
 * and gives zero rows; every other failure throws a {@link PartnerApiError}, exactly like the listing.
 *
 * Caution for callers: zero rows is evidence of absence only as good as the partner's API. A path that is
 * wrong in a way that still yields a JSON 404 looks the same, so check the configuration with a reference
 * known to exist before trusting absences.
 */
export async function lookupByReference(
  config: ApiSourceConfig,
  reference: string,
  options: ApiReadOptions,
): Promise<{ rows: PartnerRow[]; rejected: RejectedRow[] }> {
  const resolved = resolveApiSourceConfig(config);
  const client = createPartnerClient(resolved, options);
  const lookup = resolved.lookup;
  if (!lookup) throw client.configError('the source has no lookup; set lookup.path');
  if (!lookup.path.includes('{reference}')) {
    throw client.configError(`lookup.path "${lookup.path}" has no {reference} placeholder`);
  }
  const url = joinUrl(resolved.baseUrl, lookup.path.replaceAll('{reference}', encodeURIComponent(reference)));
  const where = `looking up reference ${JSON.stringify(reference)}`;

  const answer = await client.getJsonOrNotFound(url, where);
  const rows: PartnerRow[] = [];
  const rejected: RejectedRow[] = [];
  if ('notFound' in answer) return { rows, rejected };

  // With itemsField '' an object answer is the item itself (`/v1/transactions/{reference}` style).
  const items =
    lookup.itemsField === '' && !Array.isArray(answer.body)
      ? [answer.body]
      : itemsOf(answer.body, lookup.itemsField, client, url, where);
  items.forEach((item, index) => {
    const mapped = mapApiItem(item, index + 1, resolved.fields, options.timezone, resolved);
    if (mapped.kind === 'row') rows.push(mapped.row);
    else rejected.push(mapped.rejected);
  });
  return { rows, rejected };
}
