import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { DateTime } from 'luxon';
import twilio from '../../../reconcilers/twilio.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import { dbNow, minutes, useReconcileFixture } from '../support.js';

const ACCOUNT = 'AC00000000000000000000000000000066';
const env = { TWILIO_ACCOUNT_SID: ACCOUNT, TWILIO_AUTH_TOKEN: 'twilio_window_coverage_token' };
const LIST_PATH = `/2010-04-01/Accounts/${ACCOUNT}/Messages.json`;

/** A delivered message dated `sentAt` (RFC 2822, whole seconds, GMT), to a number with no intent. */
const message = (sentAt: Date) => ({
  account_sid: ACCOUNT,
  sid: 'SM00000000000000000000000000000066',
  to: '+15550006666',
  from: '+15557770000',
  direction: 'outbound-api',
  status: 'delivered',
  price: '-0.00790',
  price_unit: 'USD',
  date_sent: DateTime.fromJSDate(sentAt, { zone: 'UTC' }).toFormat('EEE, dd MMM yyyy HH:mm:ss ZZZ', {
    locale: 'en-US',
  }),
});

describe('shipped partner: twilio, the coverage a whole-second listing declares', () => {
  const partner = 'twilio-window-coverage';
  const fx = useReconcileFixture('rec_twilio_coverage', { subMinorUnitPartners: [partner] });

  it('is exactly the window asked for (DateSent>= .. DateSent<=), never a moment outside it', async () => {
    const now = await dbNow(fx.sql);
    const asked: URLSearchParams[] = [];
    const server: Server = createServer((request, response) => {
      asked.push(new URL(request.url ?? '/', 'http://127.0.0.1').searchParams);
      response.writeHead(200, { 'content-type': 'application/json' });
      // One message an hour old (an empty listing declares no coverage at all).
      response.end(JSON.stringify({ messages: [message(minutes(now, -60))], next_page_uri: null }));
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
          path: LIST_PATH,
          retries: 0,
        },
      };
      const [run] = await reconcile({ pool: fx.sql, reconciler, env });
      expect(run.status, `error: ${run.error}`).to.equal('succeeded');
      expect(asked).to.have.length(1);
      const from = asked[0]!.get('DateSent>');
      const to = asked[0]!.get('DateSent<');
      expect(from).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(to).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(run.coverage?.from.toISOString()).to.equal(new Date(from!).toISOString());
      expect(run.coverage?.to.toISOString()).to.equal(new Date(to!).toISOString());
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  });
});
