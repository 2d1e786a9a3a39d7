import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { ApiSourceConfig } from '../../src/reports/apiSourceConfig.js';
import { PartnerApiError } from '../../src/reports/errors/PartnerApiError.js';
import type { ReportItem } from '../../src/reports/partnerRow.js';
import { readApiReport } from '../../src/reports/readApiReport.js';

/** Ten items `it-0` .. `it-9`, listed three a page by each style of pagination below. */
const ITEMS = Array.from({ length: 10 }, (_, i) => ({
  id: `it-${i}`,
  reference: `order-${i}`,
  amount: '1.00',
  currency: 'USD',
  executed_at: '2026-11-30T10:00:00Z',
}));
const SIZE = 3;

type Handler = (url: URL, request: IncomingMessage, response: ServerResponse) => void;

async function serve(handler: Handler): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) =>
    handler(new URL(request.url ?? '/', 'http://x'), request, response),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function json(response: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(200, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

async function read(config: ApiSourceConfig, env: NodeJS.ProcessEnv = {}): Promise<ReportItem[]> {
  const items: ReportItem[] = [];
  for await (const item of readApiReport(config, { partner: 'p', timezone: 'UTC', env })) items.push(item);
  return items;
}

async function failure(config: ApiSourceConfig): Promise<PartnerApiError> {
  try {
    await read(config);
  } catch (error) {
    expect(error).to.be.instanceOf(PartnerApiError);
    return error as PartnerApiError;
  }
  throw new Error('expected the listing to fail');
}

const ids = (items: ReportItem[]) =>
  items.map((i) => (i.kind === 'row' ? i.row.partnerReference : 'rejected'));
const ALL = ITEMS.map((i) => i.id);

function config(
  url: string,
  pagination: ApiSourceConfig['pagination'],
  extra: Partial<ApiSourceConfig> = {},
) {
  return {
    type: 'api' as const,
    baseUrl: `${url}/api`,
    path: '/items',
    pagination,
    fields: {
      reference: 'reference',
      partnerReference: 'id',
      amount: 'amount',
      currency: 'currency',
      executedAt: 'executed_at',
    },
    retries: 0,
    ...extra,
  };
}

describe('reports: API pagination (next address, Link header, has_more) and its limits', () => {
  it('a next-page path in the body is resolved against the base URL`s origin, page after page', async () => {
    const server = await serve((url, _request, response) => {
      const page = Number(url.searchParams.get('p') ?? '0');
      const more = (page + 1) * SIZE < ITEMS.length;
      json(response, {
        data: ITEMS.slice(page * SIZE, (page + 1) * SIZE),
        next: more ? `/api/items?p=${page + 1}` : null,
      });
    });
    try {
      expect(ids(await read(config(server.url, { type: 'next', nextField: 'next' })))).to.deep.equal(ALL);
    } finally {
      await server.close();
    }
  });

  it('a next page on another origin is refused, never followed with our credentials', async () => {
    const server = await serve((_url, _request, response) =>
      json(response, { data: ITEMS.slice(0, 3), next_page_uri: 'http://198.51.100.7/steal' }),
    );
    try {
      const error = await failure(config(server.url, { type: 'next' }));
      expect(error.message).to.contain('the next page is on http://198.51.100.7');
    } finally {
      await server.close();
    }
  });

  it('a next page on our origin but another path (another account`s list) is refused, by field or Link', async () => {
    const asked: string[] = [];
    const server = await serve((url, _request, response) => {
      asked.push(url.pathname);
      json(
        response,
        { data: ITEMS.slice(0, 3), next_page_uri: '/api/other/items?page=2' },
        { link: '</api/other/items?page=2>; rel="next"' },
      );
    });
    try {
      for (const pagination of [{ type: 'next' }, { type: 'link' }] as const) {
        const error = await failure(config(server.url, pagination));
        expect(error.code).to.equal('bad_body');
        expect(error.message).to.contain(
          `the next page is at ${server.url}/api/other/items, not on the listing's own path /api/items`,
        );
      }
      expect(asked).to.deep.equal(['/api/items', '/api/items']);
    } finally {
      await server.close();
    }
  });

  it('RFC 8288 Link rel="next", among other relations, until a page has none', async () => {
    const server = await serve((url, _request, response) => {
      const page = Number(url.searchParams.get('page') ?? '0');
      const links = [`<${'/api/items?page=0'}>; rel="first"`];
      if ((page + 1) * SIZE < ITEMS.length) links.push(`</api/items?page=${page + 1}>; rel="next"`);
      json(response, { data: ITEMS.slice(page * SIZE, (page + 1) * SIZE) }, { link: links.join(', ') });
    });
    try {
      expect(ids(await read(config(server.url, { type: 'link' })))).to.deep.equal(ALL);
    } finally {
      await server.close();
    }
  });

  it('has_more with the last item`s id as starting_after', async () => {
    const server = await serve((url, _request, response) => {
      const after = url.searchParams.get('starting_after');
      const start = after === null ? 0 : ITEMS.findIndex((i) => i.id === after) + 1;
      const limit = Number(url.searchParams.get('limit'));
      json(response, {
        object: 'list',
        data: ITEMS.slice(start, start + limit),
        has_more: start + limit < ITEMS.length,
      });
    });
    try {
      expect(ids(await read(config(server.url, { type: 'hasMore', limit: SIZE })))).to.deep.equal(ALL);
    } finally {
      await server.close();
    }
  });

  it('a next page that is one already read (a loop) fails the listing', async () => {
    const server = await serve((url, _request, response) => {
      const page = Number(url.searchParams.get('p') ?? '0');
      json(response, {
        data: ITEMS.slice(page, page + 1),
        next_page_uri: `/api/items?p=${page === 2 ? 1 : page + 1}`,
      });
    });
    try {
      const error = await failure(config(server.url, { type: 'next' }));
      expect(error.code).to.equal('cursor_repeated');
    } finally {
      await server.close();
    }
  });

  it('a page given again under a fresh address or cursor (its records twice) fails the listing', async () => {
    // Page 1 is page 0 again, then the listing ends: the records of the page never given (it-3 ..) are
    // missing, and the listing would look complete.
    const server = await serve((url, _request, response) => {
      const repeat = url.searchParams.has('p') || url.searchParams.has('cursor');
      json(response, {
        data: ITEMS.slice(0, SIZE),
        next_page_uri: repeat ? null : '/api/items?p=1',
        next_cursor: repeat ? null : 'c1',
      });
    });
    try {
      for (const pagination of [{ type: 'next' }, { type: 'cursor' }] as const) {
        const error = await failure(config(server.url, pagination));
        expect(error.code).to.equal('record_repeated');
        expect(error.message).to.contain('record 4 at page 2 is record 1 again');
      }
    } finally {
      await server.close();
    }
  });

  it('a record listed twice on one page fails the listing too', async () => {
    const server = await serve((_url, _request, response) =>
      json(response, { data: [ITEMS[0], ITEMS[1], ITEMS[0]] }),
    );
    try {
      const error = await failure(config(server.url, { type: 'none' }));
      expect(error.code).to.equal('record_repeated');
      expect(error.message).to.contain('record 3 in the listing is record 1 again');
    } finally {
      await server.close();
    }
  });

  it('records alike in every field read but one the source does not map, or naming no partner id, are all read', async () => {
    // Two partial refunds of one charge, for the same amount in the same second: their own ids differ.
    const refund = (txn: string) => ({ ...ITEMS[0], balance_transaction: txn });
    const sameIdLater = { ...ITEMS[0], executed_at: '2026-12-01T10:00:00Z' };
    const unnamed = { ...ITEMS[1], id: null };
    const server = await serve((_url, _request, response) =>
      json(response, { data: [refund('txn_2'), refund('txn_3'), sameIdLater, unnamed, unnamed] }),
    );
    try {
      const items = await read(config(server.url, { type: 'none' }));
      expect(ids(items)).to.deep.equal(['it-0', 'it-0', 'it-0', null, null]);
    } finally {
      await server.close();
    }
  });

  it('pages still to come after maxPages: the listing fails rather than pass for complete', async () => {
    const server = await serve((url, _request, response) => {
      const page = Number(url.searchParams.get('p') ?? '0');
      json(response, {
        data: ITEMS.slice(page * SIZE, (page + 1) * SIZE),
        next_page_uri: `/api/items?p=${page + 1}`,
      });
    });
    try {
      const error = await failure(config(server.url, { type: 'next' }, { maxPages: 2 }));
      expect(error.code).to.equal('too_many_pages');
      expect(error.message).to.contain('goes on past 2 pages (maxPages)');
    } finally {
      await server.close();
    }
  });

  it('a window written to the second has both ends rounded down (the coverage declared is that same window)', async () => {
    let query: URLSearchParams | undefined;
    const server = await serve((url, _request, response) => {
      query = url.searchParams;
      json(response, { data: [] });
    });
    try {
      const source = config(
        server.url,
        { type: 'none' },
        { window: { fromParam: 'DateSent>', toParam: 'DateSent<', format: 'seconds' } },
      );
      const window = { from: new Date('2026-11-30T10:00:00.500Z'), to: new Date('2026-11-30T12:00:00.200Z') };
      for await (const _ of readApiReport(source, { partner: 'p', timezone: 'UTC', window })) {
        // no items
      }
      expect(query?.get('DateSent>')).to.equal('2026-11-30T10:00:00Z');
      expect(query?.get('DateSent<')).to.equal('2026-11-30T12:00:00Z');
    } finally {
      await server.close();
    }
  });

  it('HTTP Basic from two environment variables (RFC 7617); a missing one is named', async () => {
    let seen: string | undefined;
    const server = await serve((_url, request, response) => {
      seen = request.headers.authorization;
      json(response, { data: ITEMS.slice(0, 1) });
    });
    try {
      const basic = config(
        server.url,
        { type: 'none' },
        { auth: { basic: { usernameEnv: 'U', passwordEnv: 'P' } } },
      );
      expect(ids(await read(basic, { U: 'AC123', P: 'sécret:42' }))).to.deep.equal(['it-0']);
      expect(seen).to.equal(`Basic ${Buffer.from('AC123:sécret:42', 'utf8').toString('base64')}`);
      let error: unknown;
      try {
        await read(basic, { U: 'AC123' });
      } catch (caught) {
        error = caught;
      }
      expect((error as PartnerApiError).code).to.equal('auth_missing');
      expect((error as Error).message).to.contain(
        'the environment variable P that should hold the API password is not set',
      );
    } finally {
      await server.close();
    }
  });
});
