import { defineReconciler } from 'intent-ledger';

/**
 * globex-sms: an SMS provider that bills per message and exposes what it sent as a JSON listing with cursor
 * pagination. The token is read from GLOBEX_API_TOKEN at run time and never logged.
 *
 *   GET /v1/settlements?from=...&to=...&cursor=...  ->  { "data": [{ "id", "reference", "amount", "currency", "executed_at" }], "next_cursor": "..." }
 */
export default defineReconciler({
  partner: 'globex-sms',
  schedule: '*/10 * * * *',
  timezone: 'UTC',
  stuckAfter: '10m',
  settlementLag: '5m',
  deadline: '1d',
  maxRejectedRatio: 0,
  match: { by: 'reference' },
  source: {
    type: 'api',
    baseUrl: process.env.GLOBEX_API_URL ?? 'http://127.0.0.1:4010',
    path: '/v1/settlements',
    auth: { header: 'Authorization', env: 'GLOBEX_API_TOKEN', scheme: 'Bearer' },
    pagination: {
      type: 'cursor',
      cursorParam: 'cursor',
      nextCursorField: 'next_cursor',
      limitParam: 'limit',
      limit: 500,
    },
    itemsField: 'data',
    fields: {
      reference: 'reference',
      partnerReference: 'id',
      amount: 'amount',
      currency: 'currency',
      executedAt: 'executed_at',
    },
    timeoutMs: 10_000,
    retries: 3,
  },
});
