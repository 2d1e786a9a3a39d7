import { type ApiSourceConfig, resolveApiSourceConfig } from './apiSourceConfig.js';
import { PartnerApiError } from './errors/PartnerApiError.js';
import { itemsOf } from './itemsOf.js';
import { joinUrl } from './joinUrl.js';
import { mapApiItem } from './mapApiItem.js';
import { describeNoSuchReference, saysNoSuchReference } from './noSuchReference.js';
import { createPartnerClient } from './partnerClient.js';
import type { PartnerRow, RejectedRow } from './partnerRow.js';
import type { ApiReadOptions } from './readApiReport.js';

/**
 * Asks the partner about one reference, for partners that offer no listing (or to double-check one intent).
 * Rows come back with `line` = position in the answer. A 404 gives zero rows (the partner says it never
 * executed it) only when it is the partner's own answer for an unknown reference, as `lookup.notFound`
 * describes it (noSuchReference.ts says why); any other 404, and every other failure, throws a
 * {@link PartnerApiError}, exactly like the listing, and the run proves nothing.
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
  if ('notFound' in answer) {
    if (lookup.notFound && saysNoSuchReference(lookup.notFound, answer.body)) return { rows, rejected };
    throw new PartnerApiError(
      `partner ${options.partner}: answered HTTP 404 ${where}` +
        (lookup.notFound
          ? `, but not with its answer for an unknown reference (lookup.notFound: ${describeNoSuchReference(lookup.notFound)}), so it may come from a wrong path or a gateway: check baseUrl and lookup.path`
          : ': set lookup.notFound to what the partner answers for a reference it has nothing under, or no 404 can mean "never executed"'),
      {
        code: 'http_status',
        partner: options.partner,
        url: url.href,
        status: 404,
        attempts: answer.attempts,
      },
    );
  }

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
