import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { DateTime } from 'luxon';
import twilio from '../../../reconcilers/twilio.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import { dbNow, intentRow, minutes, place, spec, unknownIntent, useReconcileFixture } from '../support.js';

const OURS = 'AC00000000000000000000000000000088';
const OTHER = 'AC00000000000000000000000000000099';
const env = { TWILIO_ACCOUNT_SID: OURS, TWILIO_AUTH_TOKEN: 'twilio_next_elsewhere_token' };
const listPath = (account: string) => `/2010-04-01/Accounts/${account}/Messages.json`;

const rfc2822 = (at: Date) =>
  DateTime.fromJSDate(at, { zone: 'UTC' }).toFormat('EEE, dd MMM yyyy HH:mm:ss ZZZ', { locale: 'en-US' });

const message = (account: string, sid: string, to: string, sentAt: Date) => ({
  account_sid: account,
  sid,
  to,
  from: '+15557770000',
  direction: 'outbound-api',
  status: 'delivered',
  price: '-0.00790',
  price_unit: 'USD',
  date_sent: rfc2822(sentAt),
});

describe('shipped partner: twilio, a next_page_uri that leaves our account', () => {
  const partner = 'twilio-next-elsewhere';
  const fx = useReconcileFixture('rec_twilio_next_elsewhere', { subMinorUnitPartners: [partner] });

  it("another account's messages (same origin, another path) never complete our intents", async () => {
    const now = await dbNow(fx.sql);
    const sms = (to: string) => spec(partner, to, { amount: '0.0079', currency: 'USD', operation: 'sms' });
    const ours = await unknownIntent(fx.ledger, sms('+15550000001'));
    const notOurs = await unknownIntent(fx.ledger, sms('+15550000002'));
    await place(fx.sql, ours, { startedAt: minutes(now, -180) });
    await place(fx.sql, notOurs, { startedAt: minutes(now, -170) });
    // Page 1 is our account's; its next_page_uri points at another account's list on the same host (a
    // subaccount, a proxy's mix-up). Our credentials are sent there too, and the message it lists to
    // +15550000002 was sent by that account, not by us.
    const server: Server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      const body =
        url.pathname === listPath(OURS)
          ? {
              messages: [message(OURS, 'SM_OURS', '+15550000001', minutes(now, -179))],
              next_page_uri: `${listPath(OTHER)}?PageSize=1000&Page=1&PageToken=PA1`,
            }
          : {
              messages: [message(OTHER, 'SM_OTHER', '+15550000002', minutes(now, -169))],
              next_page_uri: null,
            };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const source = twilio.source as ReconcilerApiSource;
      const reconciler: ReconcilerConfig = {
        ...twilio,
        partner,
        source: {
          ...source,
          baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          path: listPath(OURS),
          retries: 0,
        },
      };
      await reconcile({ pool: fx.sql, reconciler, env });
      // Completed, the SMS to +15550000002 is never sent: it must stay for a person (or the run fail).
      expect((await intentRow(fx.sql, notOurs)).status).to.equal('unknown');
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  });
});
