import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** The fixture's messages (test/fixtures/partners/twilio/messages.json), newest first as Twilio lists them. */
export const TWILIO_FIXTURE = JSON.parse(
  readFileSync(join(__dirname, '../../../../test/fixtures/partners/twilio/messages.json'), 'utf8'),
) as { account_sid: string; messages: Record<string, unknown>[] };

export interface TwilioFake {
  url: string;
  /** Query strings of every listing request, in order. */
  requests: URLSearchParams[];
  close(): Promise<void>;
}

/**
 * A Twilio-like Messages list on loopback: HTTP Basic auth with the account SID and auth token, pages of
 * `pageSize` messages linked by `next_page_uri` (a path with `Page` and `PageToken`, as Twilio writes it),
 * and, with `failOnPage`, an HTTP 500 for that page (0-based, as Twilio's `Page`), or with `repeatPreviousOn`,
 * the page before it again.
 */
export async function startTwilioFake(options: {
  authToken: string;
  pageSize: number;
  failOnPage?: number;
  /**
   * For this page (0-based), the previous page's messages again, as the listing's last page: the paging
   * misbehaves, and the messages of this page and after are never listed.
   */
  repeatPreviousOn?: number;
  /** Fields of fixture messages to list otherwise, by SID (a price Twilio set later, say). */
  patch?: Record<string, Record<string, unknown>>;
  /** Messages listed besides the fixture's (after them). */
  extra?: Record<string, unknown>[];
  /**
   * Filter by `DateSent>` / `DateSent<` as Twilio does: a message is listed only when its `date_sent` is in
   * that range, so one not sent yet (queued, scheduled: `date_sent` null) is not listed at all.
   */
  filterDateSent?: boolean;
}): Promise<TwilioFake> {
  const sid = TWILIO_FIXTURE.account_sid;
  const listPath = `/2010-04-01/Accounts/${sid}/Messages.json`;
  const expected = `Basic ${Buffer.from(`${sid}:${options.authToken}`).toString('base64')}`;
  const requests: URLSearchParams[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (request.headers.authorization !== expected) {
      send(401, {
        code: 20003,
        message: 'Authenticate',
        more_info: 'https://www.twilio.com/docs/errors/20003',
        status: 401,
      });
      return;
    }
    if (url.pathname !== listPath) {
      send(404, { code: 20404, message: 'The requested resource was not found', status: 404 });
      return;
    }
    requests.push(url.searchParams);
    const page = Number(url.searchParams.get('Page') ?? '0');
    if (page === options.failOnPage) {
      send(500, { code: 20500, message: 'Internal Server Error', status: 500 });
      return;
    }
    const size = options.pageSize;
    const from = Date.parse(url.searchParams.get('DateSent>') ?? '');
    const to = Date.parse(url.searchParams.get('DateSent<') ?? '');
    const fixture = TWILIO_FIXTURE.messages.map((message) => ({
      ...message,
      ...options.patch?.[message.sid as string],
    }));
    const listed = [...fixture, ...(options.extra ?? [])].filter((message) => {
      if (!options.filterDateSent) return true;
      const sent = typeof message.date_sent === 'string' ? Date.parse(message.date_sent) : Number.NaN;
      return !Number.isNaN(sent) && !(sent < from) && !(sent > to);
    });
    const repeat = page === options.repeatPreviousOn;
    const shown = repeat ? page - 1 : page;
    const messages = listed.slice(shown * size, (shown + 1) * size);
    const more = !repeat && (page + 1) * size < listed.length;
    const query = (n: number) => `PageSize=${size}&Page=${n}${n > 0 ? `&PageToken=PASM${n}` : ''}`;
    send(200, {
      first_page_uri: `${listPath}?${query(0)}`,
      end: page * size + messages.length - 1,
      previous_page_uri: page > 0 ? `${listPath}?${query(page - 1)}` : null,
      messages,
      uri: `${listPath}?${query(page)}`,
      page_size: size,
      start: page * size,
      next_page_uri: more ? `${listPath}?${query(page + 1)}` : null,
      page,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
