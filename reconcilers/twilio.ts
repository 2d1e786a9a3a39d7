import { defineReconciler } from '../src/reconcile/reconcilerConfig.js';

/**
 * twilio: SMS through Twilio's Programmable Messaging, reconciled from its Messages list API, as published in
 * Twilio's Message resource reference (https://www.twilio.com/docs/messaging/api/message-resource, "Read
 * multiple Message resources"; paging: https://www.twilio.com/docs/usage/twilios-response#pagination):
 *
 *   GET /2010-04-01/Accounts/{AccountSid}/Messages.json?PageSize=..&DateSent>=..&DateSent<=..
 *     -> { "messages": [{ "sid", "to", "from", "status", "direction", "price", "price_unit", "date_sent", ... }],
 *          "next_page_uri": "/2010-04-01/Accounts/{AccountSid}/Messages.json?...&PageToken=..." | null, ... }
 *
 * - Auth: HTTP Basic, the Account SID as user name and the Auth Token as password, from TWILIO_ACCOUNT_SID and
 *   TWILIO_AUTH_TOKEN (read at run time, never logged). TWILIO_API_URL replaces the public API's address
 *   (a test double, a regional edge). The account SID is also part of the path, read when this file loads.
 * - Twilio echoes nothing of ours: an intent's `reference` must be the recipient (`to`) as Twilio writes it,
 *   E.164 (the Messaging API requires `To` in E.164: https://www.twilio.com/docs/api/errors/60703), or the
 *   `whatsapp:` address; `match.shape` keeps intents written otherwise from proof of absence. A message
 *   is matched to the partner's intents with that recipient whose attempt could have sent it. Two intents
 *   to one number close in time are exactly the case the ambiguity rule exists for: neither is guessed.
 * - `date_sent` is RFC 2822 (`Wed, 18 Aug 2010 20:01:40 +0000`). `price` is what the message cost, written
 *   negative (`"-0.00750"`), in `price_unit`: read as an absolute amount. It is null until Twilio prices
 *   the message, and an intent without an amount compares nothing.
 * - Row kinds from `direction` and `status`: inbound messages are ignored; an outbound message that left
 *   Twilio (`sent`, `delivered`, `undelivered` -- handed to the carrier and billed -- `read`,
 *   `partially_delivered`) is an execution; `failed` and `canceled` are tries that did not execute; a message
 *   still on its way (`accepted`, `scheduled`, `queued`, `sending`) is read as not executed *yet*: it
 *   completes nothing and keeps its intent from being proven absent, and a later run sees its final status.
 *   Any other status or direction rejects the message.
 * - The `DateSent` window lists only messages that left the queue (a queued or scheduled one has no
 *   `date_sent`): `settlementLag` covers the longest a message may wait there (its ValidityPeriod), so an
 *   intent whose message is still queued is never proven absent from a listing that cannot show it.
 *   Messages scheduled ahead (`SendAt`, up to 35 days) wait longer than that: an account that schedules
 *   messages must raise `settlementLag` past its furthest `SendAt`, or such intents are proven absent while
 *   their message is still waiting to go.
 */
const accountSid = process.env.TWILIO_ACCOUNT_SID ?? '';

const EXECUTED = new Set(['sent', 'delivered', 'undelivered', 'read', 'partially_delivered']);
const NOT_EXECUTED = new Set(['failed', 'canceled', 'accepted', 'scheduled', 'queued', 'sending']);
const OUTBOUND = new Set(['outbound-api', 'outbound-call', 'outbound-reply']);

export default defineReconciler({
  partner: 'twilio',
  schedule: '*/15 * * * *',
  timezone: 'UTC',
  stuckAfter: '15m',
  // The listing is filtered on date_sent, which a message gets only once it leaves Twilio's queue, where it
  // may wait up to its ValidityPeriod (at most and by default 36,000 s, 10 hours) before it is sent or fails:
  // until then it is in no listing, so no listing proves it was never sent. An account that sends with a
  // shorter ValidityPeriod may lower this to that period plus a margin, never below it.
  settlementLag: '11h',
  deadline: '1d',
  maxRejectedRatio: 0,
  // Twilio lists `to` in E.164 (`+5511987654321`; `whatsapp:+5511987654321` for WhatsApp), whatever form the
  // number was sent in: an intent whose reference is written otherwise (`11 98765-4321`) is never in a
  // listing as it is, so its absence proves nothing (match.shape) and the run counts it in its warnings.
  match: { by: 'reference', shape: '^(whatsapp:)?\\+[1-9][0-9]{1,14}$' },
  source: {
    type: 'api',
    baseUrl: process.env.TWILIO_API_URL ?? 'https://api.twilio.com',
    path: `/2010-04-01/Accounts/${accountSid}/Messages.json`,
    auth: { basic: { usernameEnv: 'TWILIO_ACCOUNT_SID', passwordEnv: 'TWILIO_AUTH_TOKEN' } },
    query: { PageSize: '1000' },
    window: { fromParam: 'DateSent>', toParam: 'DateSent<', format: 'seconds' },
    pagination: { type: 'next', nextField: 'next_page_uri' },
    itemsField: 'messages',
    fields: {
      reference: 'to',
      partnerReference: 'sid',
      amount: 'price',
      currency: 'price_unit',
      executedAt: 'date_sent',
    },
    dateFormat: 'EEE, dd MMM yyyy HH:mm:ss ZZZ',
    amount: { absolute: true },
    amountMayBeMissing: true,
    kind: {
      columns: ['direction', 'status'],
      classify: ({ direction, status }) => {
        if (direction === 'inbound') return 'ignored';
        if (!OUTBOUND.has(direction ?? '')) return undefined;
        if (EXECUTED.has(status ?? '')) return 'execution';
        if (NOT_EXECUTED.has(status ?? '')) return 'failed';
        return undefined;
      },
    },
    timeoutMs: 15_000,
    retries: 3,
  },
});
