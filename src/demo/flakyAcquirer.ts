import { type FakePartner, startFakePartner } from '../partnerFake/fakePartnerServer.js';
import { seededRandom } from './random.js';

/**
 * The demo's partner: a real HTTP acquirer on loopback that cannot deduplicate and misbehaves the way real
 * ones do. Of the charge requests: ~6% 503 without executing, ~6% executed then the connection reset,
 * ~5% executed but answered after the client's timeout, ~5% 429, ~4% declined (422).
 */
export async function startFlakyAcquirer(
  seed: number,
  token: string,
  idPrefix: string,
): Promise<FakePartner> {
  const partner = await startFakePartner({ token, pageSize: 25, idPrefix });
  const random = seededRandom(seed);
  partner.setFault((request) => {
    if (request.method !== 'POST') return undefined;
    const roll = random();
    if (roll < 0.06) return { kind: 'status', status: 503 };
    if (roll < 0.12) return { kind: 'reset-after' };
    if (roll < 0.17) return { kind: 'delay', ms: 1_500 };
    if (roll < 0.22) return { kind: 'status', status: 429, retryAfter: 1 };
    if (roll < 0.26) return { kind: 'status', status: 422, body: '{"error":"card declined"}' };
    return undefined;
  });
  return partner;
}
