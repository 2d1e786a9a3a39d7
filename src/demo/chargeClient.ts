import axios from 'axios';
import type { CallResult } from '../shared/types.js';

/** A charge as the demo's consumer asks the (fake) acquirer for it. */
export interface ChargeRequest {
  reference: string;
  amount: string;
  currency: string;
}

/**
 * The partner call exactly as it would be written without the ledger: one POST, the ledger's signal
 * passed through so the call never outlives its lease, a client timeout shorter than the lease.
 */
export async function charge(
  partner: { url: string; token: string },
  request: ChargeRequest,
  signal: AbortSignal,
): Promise<CallResult> {
  const response = await axios.post<{ id: string }>(`${partner.url}/v1/charges`, request, {
    signal,
    timeout: 1_000,
    headers: { authorization: `Bearer ${partner.token}` },
  });
  return { partnerReference: response.data.id, response: { id: response.data.id } };
}
