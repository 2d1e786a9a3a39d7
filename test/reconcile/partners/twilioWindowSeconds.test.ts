import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { DateTime } from 'luxon';
import twilio from '../../../reconcilers/twilio.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import { dbNow, intentRow, minutes, place, spec, unknownIntent, useReconcileFixture } from '../support.js';

const ACCOUNT = 'AC00000000000000000000000000000077';
const AUTH_TOKEN = 'twilio_window_auth_token';
const env = { TWILIO_ACCOUNT_SID: ACCOUNT, TWILIO_AUTH_TOKEN: AUTH_TOKEN };
const LIST_PATH = `/2010-04-01/Accounts/${ACCOUNT}/Messages.json`;

/** Twilio's date_sent: RFC 2822, whole seconds, GMT. */
const rfc2822 = (at: Date) =>
  DateTime.fromJSDate(at, { zone: 'UTC' }).toFormat('EEE, dd MMM yyyy HH:mm:ss ZZZ', { locale: 'en-US' });

function message(sid: string, to: string, sentAt: Date) {
  return {
    account_sid: ACCOUNT,
    sid,
    to,
    from: '+15557770000',
    direction: 'outbound-api',
    status: 'delivered',
    price: '-0.00790',
    price_unit: 'USD',
    date_sent: rfc2822(sentAt),
  };
}

/**
 * A busy account's Messages list: one page, filtered on `DateSent>=` / `DateSent<=` at whole seconds, both
 * ends included, as Twilio documents its inequalities ("on and after", "on and before"). Besides `listed`,
 * the account sent a message during the very second the window starts in (a busy account sends one every
 * second): Twilio lists it, dated that second.
 */
async function startBusyAccount(listed: ReturnType<typeof message>[]): Promise<{
  url: string;
  close(): Promise<void>;
}> {
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const from = new Date(url.searchParams.get('DateSent>') ?? '');
    const messages = [...listed, message('SM_AT_WINDOW_START', '+15550009999', from)];
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ messages, next_page_uri: null, page: 0, page_size: 1000 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('shipped partner: twilio, the default window written in whole seconds', () => {
  const partner = 'twilio-window-seconds';
  const fx = useReconcileFixture('rec_twilio_seconds', { subMinorUnitPartners: [partner] });

  it("a message Twilio lists in the window's first second is not rejected as outside it (which fails every run of a busy account)", async () => {
    const now = await dbNow(fx.sql);
    const sms = (to: string) => spec(partner, to, { amount: '0.0079', currency: 'USD', operation: 'sms' });
    const delivered = await unknownIntent(fx.ledger, sms('+15550000001'));
    await place(fx.sql, delivered, { startedAt: minutes(now, -180) });
    const account = await startBusyAccount([
      message('SM00000000000000000000000000000001', '+15550000001', minutes(now, -179)),
    ]);
    try {
      const source = twilio.source as ReconcilerApiSource;
      const reconciler: ReconcilerConfig = {
        ...twilio,
        partner,
        source: { ...source, baseUrl: account.url, path: LIST_PATH, retries: 0 },
      };
      // No coverage declared: the default window, from now() minus deadline + lag + stuckAfter + clockSkew,
      // which has now()'s milliseconds (one run in a thousand starts on a whole second and passes anyway).
      const [run] = await reconcile({ pool: fx.sql, reconciler, env });
      expect(run.status, `error: ${run.error}`).to.equal('succeeded');
      expect((await intentRow(fx.sql, delivered)).status).to.equal('completed');
    } finally {
      await account.close();
    }
  });
});
