import { describe, getPath, JsonNumber, type JsonValue } from './parseJsonKeepingNumbers.js';
import type { PartnerClient } from './partnerClient.js';

/** The items array of one answer, or a PartnerApiError saying which configured field was not one. */
export function itemsOf(
  body: JsonValue,
  itemsField: string,
  client: PartnerClient,
  url: URL,
  where: string,
): JsonValue[] {
  // A partner that says something went wrong has not given the complete listing, whatever items came with
  // it: taking them as complete would let absence prove "not executed" for charges it simply left out.
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && !(body instanceof JsonNumber)) {
    for (const member of ['error', 'errors']) {
      const reported = (body as Record<string, JsonValue>)[member];
      if (
        reported !== undefined &&
        reported !== null &&
        !(Array.isArray(reported) && reported.length === 0)
      ) {
        throw client.badBody(
          url,
          `the answer ${where} reports an error (${member}: ${describe(reported)}): it is not a complete listing`,
        );
      }
    }
  }
  const items = getPath(body, itemsField);
  if (Array.isArray(items)) return items;
  const name = itemsField === '' ? 'the answer' : `field ${itemsField}`;
  throw client.badBody(
    url,
    items === undefined
      ? `${name} is missing from the answer ${where}: check itemsField`
      : `${name} is not an array (it is ${describe(items)}) ${where}: check itemsField`,
  );
}
