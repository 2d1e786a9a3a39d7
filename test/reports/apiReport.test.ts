import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { expect } from 'chai';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import type { ApiSourceConfig } from '../../src/reports/apiSourceConfig.js';
import { PartnerApiError } from '../../src/reports/errors/PartnerApiError.js';
import { lookupByReference } from '../../src/reports/lookupPartnerReference.js';
import { mapApiItem } from '../../src/reports/mapApiItem.js';
import { JsonNumber, parseJsonKeepingNumbers } from '../../src/reports/parseJsonKeepingNumbers.js';
import type { RowItem } from '../../src/reports/partnerRow.js';
import { readApiReport } from '../../src/reports/readApiReport.js';

const TOKEN = 'sk_live_DO-NOT-LEAK-7f3a9c';
const TOKEN_ENV = 'FAKE_PARTNER_TOKEN';
const env = { [TOKEN_ENV]: TOKEN };

const FIELDS = {
  reference: 'reference',
  partnerReference: 'id',
  amount: 'amount',
  currency: 'currency',
  executedAt: 'executed_at',
} as const;

/** Short timeouts and backoff so that every retry scenario finishes in well under a second. */
function configFor(url: string, extra: Partial<ApiSourceConfig> = {}): ApiSourceConfig {
  return {
    type: 'api',
    baseUrl: url,
    path: '/v1/settlements',
    pagination: { type: 'cursor', limit: 2 },
    fields: { ...FIELDS },
    timeoutMs: 400,
    retries: 2,
    retryBaseMs: 10,
    ...extra,
  };
}

function captureLogger() {
  const lines: string[] = [];
  return {
    lines,
    warn: (obj: object, msg: string) => lines.push(`${msg} ${JSON.stringify(obj)}`),
    debug: (obj: object, msg: string) => lines.push(`${msg} ${JSON.stringify(obj)}`),
  };
}

async function collect(
  config: ApiSourceConfig,
  options: Partial<Parameters<typeof readApiReport>[1]> = {},
): Promise<RowItem[]> {
  const items: RowItem[] = [];
  for await (const item of readApiReport(config, { partner: 'acme-pay', timezone: 'UTC', env, ...options })) {
    items.push(item);
  }
  return items;
}

async function failure(promise: Promise<unknown>): Promise<PartnerApiError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(PartnerApiError);
    return error as PartnerApiError;
  }
  throw new Error('expected a PartnerApiError');
}

function rows(items: RowItem[]) {
  return items.flatMap((item) => (item.kind === 'row' ? [item.row] : []));
}

function rejections(items: RowItem[]) {
  return items.flatMap((item) => (item.kind === 'rejected' ? [item.rejected] : []));
}

/** The token must not be anywhere a human or a log shipper could see it. */
function expectNoToken(error: PartnerApiError, logLines: string[] = []) {
  expect(error.message).not.to.include(TOKEN);
  expect(JSON.stringify(error)).not.to.include(TOKEN);
  expect(inspect(error, { depth: 10, showHidden: true })).not.to.include(TOKEN);
  expect(String(error.stack)).not.to.include(TOKEN);
  for (const line of logLines) expect(line).not.to.include(TOKEN);
}

/** A tiny partner for answers the fake would never give (wrong shapes, loops, raw JSON numbers). */
async function startScripted(
  handler: (req: IncomingMessage, res: ServerResponse, url: URL) => void,
): Promise<{ url: string; requests: URL[]; close(): Promise<void> }> {
  const requests: URL[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://scripted.invalid');
    requests.push(url);
    handler(req, res, url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

const seedRows = [
  { reference: 'order-1', amount: '10.00', currency: 'BRL', executedAt: '2024-03-01T10:00:00.000Z' },
  { reference: 'order-2', amount: '20.50', currency: 'brl', executedAt: '2024-03-01T11:00:00.000Z' },
  { reference: 'order-3', amount: '-3.10', currency: 'USD', executedAt: '2024-03-01T12:00:00.000Z' },
  { reference: 'order-4', amount: '0.01', currency: 'BRL', executedAt: '2024-03-01T13:00:00.000Z' },
  {
    reference: 'order-5',
    amount: '99999999999999999999.99',
    currency: 'BRL',
    executedAt: '2024-03-02T00:00:00Z',
  },
];

describe('readApiReport', function () {
  this.timeout(10_000);
  let fake: FakePartner;

  beforeEach(async () => {
    fake = await startFakePartner({ token: TOKEN });
    fake.seed(seedRows);
  });

  afterEach(async () => {
    await fake.close();
  });

  const authed = (extra: Partial<ApiSourceConfig> = {}) =>
    configFor(fake.url, { auth: { env: TOKEN_ENV }, ...extra });

  describe('pagination', () => {
    it('follows cursors across pages, numbering lines across all of them', async () => {
      const items = await collect(authed());
      expect(rejections(items)).to.deep.equal([]);
      expect(rows(items)).to.deep.equal([
        {
          line: 1,
          reference: 'order-1',
          partnerReference: 'ch_1',
          amount: '10.00',
          currency: 'BRL',
          executedAt: new Date('2024-03-01T10:00:00Z'),
        },
        {
          line: 2,
          reference: 'order-2',
          partnerReference: 'ch_2',
          amount: '20.50',
          currency: 'BRL',
          executedAt: new Date('2024-03-01T11:00:00Z'),
        },
        {
          line: 3,
          reference: 'order-3',
          partnerReference: 'ch_3',
          amount: '-3.10',
          currency: 'USD',
          executedAt: new Date('2024-03-01T12:00:00Z'),
        },
        {
          line: 4,
          reference: 'order-4',
          partnerReference: 'ch_4',
          amount: '0.01',
          currency: 'BRL',
          executedAt: new Date('2024-03-01T13:00:00Z'),
        },
        {
          line: 5,
          reference: 'order-5',
          partnerReference: 'ch_5',
          amount: '99999999999999999999.99',
          currency: 'BRL',
          executedAt: new Date('2024-03-02T00:00:00Z'),
        },
      ]);
      expect(fake.requests).to.equal(3);
    });

    it('streams: the next page is fetched only once the previous one has been consumed', async () => {
      const reader = readApiReport(authed(), { partner: 'acme-pay', timezone: 'UTC', env });
      await reader.next();
      await reader.next();
      expect(fake.requests).to.equal(1);
      await reader.next();
      expect(fake.requests).to.equal(2);
      await reader.return(undefined);
      expect(fake.requests).to.equal(2);
    });

    it('asks for the window as ISO 8601 UTC query parameters, plus the fixed query', async () => {
      const scripted = await startScripted((_req, res) =>
        json(res, 200, '{"data": [], "next_cursor": null}'),
      );
      try {
        await collect(
          configFor(scripted.url, { query: { status: 'settled' }, window: { fromParam: 'since' } }),
          {
            window: {
              from: new Date('2024-03-01T00:00:00-03:00'),
              to: new Date('2024-03-02T00:00:00-03:00'),
            },
          },
        );
        const params = Object.fromEntries(scripted.requests[0].searchParams);
        expect(params).to.deep.equal({
          status: 'settled',
          since: '2024-03-01T03:00:00.000Z',
          to: '2024-03-02T03:00:00.000Z',
          limit: '2',
        });
      } finally {
        await scripted.close();
      }
    });

    it('lists only the executions inside the window', async () => {
      const items = await collect(authed(), {
        window: { from: new Date('2024-03-01T11:00:00Z'), to: new Date('2024-03-01T13:00:00Z') },
      });
      expect(rows(items).map((row) => row.reference)).to.deep.equal(['order-2', 'order-3']);
    });

    it('follows numbered pages past a short one, until an empty page (a partner may clamp the size)', async () => {
      const items = await collect(authed({ pagination: { type: 'page', size: 2 } }));
      expect(rows(items).map((row) => [row.line, row.reference])).to.deep.equal([
        [1, 'order-1'],
        [2, 'order-2'],
        [3, 'order-3'],
        [4, 'order-4'],
        [5, 'order-5'],
      ]);
      // Pages 1 and 2 full, page 3 short, page 4 empty: only the empty page ends the listing.
      expect(fake.requests).to.equal(4);
    });

    it('follows numbered pages until an empty one when the size is not known', async () => {
      const small = await startFakePartner({ pageSize: 2 });
      try {
        small.seed(seedRows);
        const items = await collect(configFor(small.url, { pagination: { type: 'page' } }));
        expect(rows(items)).to.have.length(5);
        expect(small.requests).to.equal(4);
      } finally {
        await small.close();
      }
    });

    it('reads a listing without pagination in one request, with a custom items path', async () => {
      const scripted = await startScripted((_req, res) =>
        json(res, 200, '{"result": {"items": [{"id": "t1", "amount": "1.00"}]}}'),
      );
      try {
        const items = await collect(
          configFor(scripted.url, {
            pagination: { type: 'none' },
            itemsField: 'result.items',
            fields: { partnerReference: 'id', amount: 'amount', currency: { value: 'brl' } },
          }),
        );
        expect(rows(items)).to.deep.equal([
          {
            line: 1,
            reference: null,
            partnerReference: 't1',
            amount: '1.00',
            currency: 'BRL',
            executedAt: null,
          },
        ]);
        expect(scripted.requests).to.have.length(1);
      } finally {
        await scripted.close();
      }
    });
  });

  describe('auth and secrecy', () => {
    it('sends the token as a bearer token', async () => {
      const items = await collect(authed());
      expect(rows(items)).to.have.length(5);
    });

    it('sends a raw token in a custom header when configured so', async () => {
      const headers: Array<string | string[] | undefined> = [];
      const scripted = await startScripted((req, res) => {
        headers.push(req.headers['x-api-key'], req.headers.authorization);
        json(res, 200, '{"data": []}');
      });
      try {
        await collect(
          configFor(scripted.url, {
            pagination: { type: 'none' },
            auth: { env: TOKEN_ENV, header: 'X-Api-Key', scheme: '' },
          }),
        );
        expect(headers).to.deep.equal([TOKEN, undefined]);
      } finally {
        await scripted.close();
      }
    });

    it('on 401 says which env var to check, without retrying and without the token anywhere', async () => {
      const logger = captureLogger();
      const error = await failure(collect(authed(), { env: { [TOKEN_ENV]: 'wrong-token' }, logger }));
      expect(error.message).to.include('answered HTTP 401');
      expect(error.message).to.include(`check the token in env ${TOKEN_ENV}`);
      expect(error).to.include({ status: 401, attempts: 1, code: 'http_status', partner: 'acme-pay' });
      expect(error.message).not.to.include('wrong-token');
      expect(JSON.stringify(error)).not.to.include('wrong-token');
      expect(fake.requests).to.equal(1);
    });

    it('names the missing env var and never the value', async () => {
      const error = await failure(collect(authed(), { env: {} }));
      expect(error.code).to.equal('auth_missing');
      expect(error.message).to.include(`environment variable ${TOKEN_ENV}`);
      expect(error.message).to.include('not set');
      expect(fake.requests).to.equal(0);
      const empty = await failure(collect(authed(), { env: { [TOKEN_ENV]: '' } }));
      expect(empty.message).to.include('empty');
    });

    it('keeps the token out of errors, their causes and the logs through retries and failures', async () => {
      const logger = captureLogger();
      fake.failNext(1, { kind: 'reset-before' });
      fake.failNext(1, { kind: 'status', status: 503 });
      fake.failNext(1, { kind: 'hang' });
      const error = await failure(collect(authed(), { logger }));
      expect(error.code).to.equal('timeout');
      expect(logger.lines.filter((line) => line.startsWith('partner API request failed'))).to.have.length(2);
      expectNoToken(error, logger.lines);

      const refused = await failure(
        collect(configFor('http://127.0.0.1:1', { auth: { env: TOKEN_ENV } }), { logger }),
      );
      expect(refused.code).to.equal('network');
      expectNoToken(refused, logger.lines);
      const refusedCause = refused.cause as Error & { config?: unknown; request?: unknown };
      expect(refusedCause).to.be.instanceOf(Error);
      expect(refusedCause.config).to.equal(undefined);
      expect(refusedCause.request).to.equal(undefined);
    });

    it('redacts the token when a partner echoes it back in an error body', async () => {
      const scripted = await startScripted((req, res) =>
        json(res, 400, JSON.stringify({ error: `bad header: ${req.headers.authorization}` })),
      );
      try {
        const error = await failure(collect(configFor(scripted.url, { auth: { env: TOKEN_ENV } })));
        expect(error.message).to.include('answered HTTP 400');
        expect(error.message).to.include('[redacted]');
        expectNoToken(error);
      } finally {
        await scripted.close();
      }
    });

    it('does not follow redirects (a custom auth header would travel along) and strips the query from urls', async () => {
      const scripted = await startScripted((_req, res) => {
        res.writeHead(302, { location: 'https://elsewhere.example/steal?token=x' });
        res.end();
      });
      try {
        const error = await failure(
          collect(configFor(scripted.url, { auth: { env: TOKEN_ENV }, query: { secret: 'q' } })),
        );
        expect(error.message).to.include('HTTP 302');
        expect(error.message).to.include('https://elsewhere.example/steal');
        expect(error.message).not.to.include('token=x');
        expect(error.url).to.equal(`${scripted.url}/v1/settlements`);
        expect(scripted.requests).to.have.length(1);
      } finally {
        await scripted.close();
      }
    });
  });

  describe('retries', () => {
    it('retries after a timeout and then succeeds', async () => {
      const logger = captureLogger();
      fake.failNext(1, { kind: 'hang' });
      const started = Date.now();
      const items = await collect(authed(), { logger });
      expect(rows(items)).to.have.length(5);
      expect(Date.now() - started).to.be.at.least(380);
      expect(fake.requests).to.equal(4);
      const retry = logger.lines.find((line) => line.startsWith('partner API request failed'));
      expect(retry).to.include('"timeoutMs":400');
    });

    it('treats an answer that arrives after timeoutMs as a timeout', async () => {
      fake.failNext(1, { kind: 'delay', ms: 700 });
      const items = await collect(authed());
      expect(rows(items)).to.have.length(5);
      expect(fake.requests).to.equal(4);
    });

    it('gives up after retries + 1 attempts with a timeout error', async () => {
      fake.failNext(3, { kind: 'hang' });
      const error = await failure(collect(authed()));
      expect(error.message).to.include('timed out after 3 attempts');
      expect(error).to.include({ code: 'timeout', attempts: 3 });
      expect(error.url).to.equal(`${fake.url}/v1/settlements`);
      expect(fake.requests).to.equal(3);
    });

    it('retries connection resets', async () => {
      fake.failNext(2, { kind: 'reset-before' });
      const items = await collect(authed());
      expect(rows(items)).to.have.length(5);
    });

    it('honours Retry-After on 429', async () => {
      fake.failNext(1, { kind: 'status', status: 429, retryAfter: 1 });
      const logger = captureLogger();
      const started = Date.now();
      const items = await collect(authed(), { logger });
      expect(rows(items)).to.have.length(5);
      expect(Date.now() - started).to.be.at.least(950);
      expect(logger.lines[0]).to.include('"status":429').and.include('"retryInMs":1000');
    });

    it('caps Retry-After at 30 seconds', async () => {
      fake.failNext(1, { kind: 'status', status: 429, retryAfter: 3600 });
      const logger = captureLogger();
      const controller = new AbortController();
      const read = collect(authed(), { logger, signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(logger.lines[0]).to.include('"retryInMs":30000');
      controller.abort();
      const error = await failure(read);
      expect(error.code).to.equal('aborted');
    });

    it('retries 5xx answers', async () => {
      fake.failNext(1, { kind: 'status', status: 500 });
      fake.failNext(1, { kind: 'status', status: 503 });
      const items = await collect(authed());
      expect(rows(items)).to.have.length(5);
      expect(fake.requests).to.equal(5);
    });

    it('reports the last status when 5xx answers exhaust the retries', async () => {
      fake.failNext(3, { kind: 'status', status: 503 });
      const error = await failure(collect(authed()));
      expect(error).to.include({ code: 'http_status', status: 503, attempts: 3 });
      expect(error.message).to.include('answered HTTP 503 at page 1 on all 3 attempts');
    });

    it('does not retry 400 or 422', async () => {
      fake.failNext(1, { kind: 'status', status: 400, body: '{"error":"from is after to"}' });
      const error = await failure(collect(authed()));
      expect(error).to.include({ status: 400, attempts: 1 });
      expect(error.message).to.include('from is after to');
      expect(fake.requests).to.equal(1);

      fake.failNext(1, { kind: 'status', status: 422 });
      const unprocessable = await failure(collect(authed()));
      expect(unprocessable.status).to.equal(422);
      expect(fake.requests).to.equal(2);
    });

    it('fails on a page in the middle after the first pages were streamed', async () => {
      fake.setFault((req) => (req.query.has('cursor') ? { kind: 'status', status: 502 } : undefined));
      const seen: RowItem[] = [];
      const error = await failure(
        (async () => {
          for await (const item of readApiReport(authed(), { partner: 'acme-pay', timezone: 'UTC', env })) {
            seen.push(item);
          }
        })(),
      );
      expect(seen).to.have.length(2);
      expect(error.message).to.include('at page 2');
    });

    it('stops waiting when the caller aborts', async () => {
      fake.failNext(5, { kind: 'hang' });
      const controller = new AbortController();
      const read = collect(authed({ timeoutMs: 5000 }), { signal: controller.signal });
      setTimeout(() => controller.abort(), 100);
      const started = Date.now();
      const error = await failure(read);
      expect(error.code).to.equal('aborted');
      expect(Date.now() - started).to.be.below(1000);
    });
  });

  describe('bodies that are not the configured shape', () => {
    it('an HTML page', async () => {
      fake.failNext(1, { kind: 'garbage', body: '<!doctype html><html><body>Maintenance</body></html>' });
      const error = await failure(collect(authed()));
      expect(error.code).to.equal('bad_body');
      expect(error.message).to.include('answered something that is not JSON at page 1');
      expect(error.message).to.include('text/html');
      expect(error.message).to.include('<!doctype html>');
      expect(fake.requests).to.equal(1);
    });

    it('truncated JSON on a later page', async () => {
      fake.setFault((req) =>
        req.query.has('cursor') ? { kind: 'garbage', body: '{"data": [{"id": "x"' } : undefined,
      );
      const error = await failure(collect(authed()));
      expect(error.message).to.include('not JSON at page 2');
    });

    it('an empty body', async () => {
      fake.failNext(1, { kind: 'garbage', body: '' });
      const error = await failure(collect(authed()));
      expect(error.message).to.include('an empty body');
    });

    it('items that are not an array, or missing', async () => {
      fake.failNext(1, { kind: 'garbage', body: '{"data": {"id": "x"}}' });
      const notArray = await failure(collect(authed()));
      expect(notArray.message).to.include('field data is not an array (it is an object) at page 1');
      fake.failNext(1, { kind: 'garbage', body: '{"items": []}' });
      const missing = await failure(collect(authed()));
      expect(missing.message).to.include('field data is missing');
      fake.failNext(1, { kind: 'garbage', body: '[]' });
      const topArray = await failure(collect(authed()));
      expect(topArray.code).to.equal('bad_body');
    });

    it('a cursor of the wrong type', async () => {
      fake.failNext(1, { kind: 'garbage', body: '{"data": [], "next_cursor": 42}' });
      const error = await failure(collect(authed()));
      expect(error.message).to.include('field next_cursor is a number at page 1');
    });

    it('a cursor that loops back', async () => {
      const scripted = await startScripted((_req, res, url) => {
        const cursor = url.searchParams.get('cursor');
        const next = cursor === null ? 'a' : cursor === 'a' ? 'b' : 'a';
        json(res, 200, JSON.stringify({ data: [{ id: `t-${cursor}`, amount: '1' }], next_cursor: next }));
      });
      try {
        const error = await failure(
          collect(configFor(scripted.url, { fields: { partnerReference: 'id', amount: 'amount' } })),
        );
        expect(error.code).to.equal('cursor_repeated');
        expect(error.message).to.include('cursor repeated at page 3');
        expect(scripted.requests).to.have.length(3);
      } finally {
        await scripted.close();
      }
    });

    it('a partner that ignores the page parameter', async () => {
      const scripted = await startScripted((_req, res) => json(res, 200, '{"data": [{"id": "same"}]}'));
      try {
        const error = await failure(
          collect(
            configFor(scripted.url, { pagination: { type: 'page' }, fields: { partnerReference: 'id' } }),
          ),
        );
        expect(error.message).to.include('page 2 is identical to page 1');
      } finally {
        await scripted.close();
      }
    });
  });

  describe('identifiers at nested paths', () => {
    const fields = {
      reference: 'order.ref',
      partnerReference: 'txn.id',
      amount: 'amount',
      currency: 'currency',
      executedAt: 'at',
    };
    const map = (item: unknown) =>
      mapApiItem(parseJsonKeepingNumbers(JSON.stringify(item)), 1, fields, 'America/Sao_Paulo');
    const base = { amount: 'ten', currency: 'BRL', at: '2024-03-01T10:00:00Z' };

    it('an identifier in a shape the path cannot follow is unreadable: rejected without identifiers', () => {
      expect(map({ ...base, order: 'r1', txn: { id: 't1' } })).to.deep.equal({
        kind: 'rejected',
        rejected: { line: 1, field: 'order.ref', reason: 'expected an object at "order", found a string' },
      });
      expect(map({ ...base, order: { ref: 'r1' }, txn: [1, 2] })).to.deep.equal({
        kind: 'rejected',
        rejected: { line: 1, field: 'txn.id', reason: 'expected an object at "txn", found an array' },
      });
    });

    it('an absent or null object on the way is "none there": the rejection still names the other identifier', () => {
      for (const order of [undefined, null]) {
        const item = map({ ...base, order, txn: { id: 't1' } });
        if (item.kind !== 'rejected') expect.fail(`expected a rejection, got ${JSON.stringify(item)}`);
        expect(item.rejected).to.deep.include({
          line: 1,
          field: 'amount',
          identifiers: { reference: null, partnerReference: 't1' },
        });
      }
    });
  });

  describe('items', () => {
    // Written by hand: JSON.stringify could not produce the unsafe numbers this is about.
    const body = `{"data": [
        {"id": "a1", "reference": "r1", "amount": "12.50", "currency": "BRL", "executed_at": "2024-03-01T10:00:00-03:00"},
        {"id": "a2", "reference": "r2", "amount": 12.5, "currency": "BRL", "executed_at": "2024-03-01T10:00:00"},
        {"id": 123456789012345678901, "reference": null, "amount": 0.1, "currency": "usd", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a4", "reference": "r4", "amount": 12345678901234567.89, "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a5", "reference": "r5", "amount": 0.10000000000000001, "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a6", "reference": "r6", "amount": 1e3, "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a7", "reference": "r7", "amount": "12,50", "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a8", "reference": "r8", "amount": "", "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"amount": "1.00", "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "", "reference": "  ", "amount": "1.00", "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        "not an object",
        null,
        {"id": "a13", "reference": "r13", "amount": "1.00", "currency": "REAIS", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a14", "reference": "r14", "amount": "1.00", "currency": "BRL", "executed_at": "yesterday"},
        {"id": "a15", "reference": "r15", "amount": "1.00", "currency": "BRL"},
        {"id": {"nsu": 1}, "reference": "r16", "amount": "1.00", "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a17", "reference": "r17", "amount": true, "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"},
        {"id": "a18", "reference": "r18", "amount": "1.00", "currency": "BRL", "executed_at": 1709287200}
      ]}`;
    let items: RowItem[];

    before(async () => {
      const scripted = await startScripted((_req, res) => json(res, 200, body));
      try {
        items = await collect(configFor(scripted.url, { pagination: { type: 'none' } }), {
          timezone: 'America/Sao_Paulo',
        });
      } finally {
        await scripted.close();
      }
    });

    it('keeps one item per record, in order, with lines 1..n', () => {
      expect(items.map((item) => (item.kind === 'row' ? item.row.line : item.rejected.line))).to.deep.equal(
        Array.from({ length: 18 }, (_, i) => i + 1),
      );
    });

    it('accepts amounts as strings and safe JSON numbers, and numeric ids exactly as written', () => {
      expect(rows(items)).to.deep.equal([
        {
          line: 1,
          reference: 'r1',
          partnerReference: 'a1',
          amount: '12.50',
          currency: 'BRL',
          executedAt: new Date('2024-03-01T13:00:00Z'),
        },
        {
          line: 2,
          reference: 'r2',
          partnerReference: 'a2',
          amount: '12.5',
          currency: 'BRL',
          executedAt: new Date('2024-03-01T13:00:00Z'),
        },
        {
          line: 3,
          reference: null,
          partnerReference: '123456789012345678901',
          amount: '0.1',
          currency: 'USD',
          executedAt: new Date('2024-03-01T10:00:00Z'),
        },
      ]);
    });

    it('rejects bad fields naming the configured path, and non-objects as "*"', () => {
      const byLine = new Map(rejections(items).map((r) => [r.line, r]));
      const unsafe = 'amount is a JSON number that cannot be represented exactly; send it as a string';
      const ids = (reference: string | null, partnerReference: string | null) => ({
        reference,
        partnerReference,
      });
      expect(byLine.get(4)).to.deep.equal({
        line: 4,
        field: 'amount',
        reason: unsafe,
        identifiers: ids('r4', 'a4'),
      });
      expect(byLine.get(5)).to.deep.equal({
        line: 5,
        field: 'amount',
        reason: unsafe,
        identifiers: ids('r5', 'a5'),
      });
      expect(byLine.get(6)).to.deep.equal({
        line: 6,
        field: 'amount',
        reason: unsafe,
        identifiers: ids('r6', 'a6'),
      });
      expect(byLine.get(7)).to.include({ field: 'amount' });
      expect(byLine.get(7)?.reason).to.include('","');
      expect(byLine.get(8)).to.include({ field: 'amount', reason: 'empty' });
      expect(byLine.get(9)).to.include({ field: 'reference' });
      expect(byLine.get(9)?.reason).to.include('neither a reference nor a partner reference');
      expect(byLine.get(10)?.reason).to.include('neither a reference nor a partner reference');
      expect(byLine.get(11)).to.deep.equal({
        line: 11,
        field: '*',
        reason: 'the item is a string, not an object',
      });
      expect(byLine.get(12)).to.deep.equal({
        line: 12,
        field: '*',
        reason: 'the item is null, not an object',
      });
      expect(byLine.get(13)).to.include({ field: 'currency' });
      expect(byLine.get(14)).to.include({ field: 'executed_at' });
      expect(byLine.get(15)).to.deep.equal({
        line: 15,
        field: 'executed_at',
        reason: 'execution time is missing',
        identifiers: ids('r15', 'a15'),
      });
      expect(byLine.get(16)).to.include({ field: 'id' });
      expect(byLine.get(17)?.reason).to.include('found a boolean');
      expect(byLine.get(18)?.reason).to.include('ISO 8601');

      // Every rejection's identifiers: carried once both were read (`null` where the item has none, blank
      // included), absent for a non-object and for an identifier of the wrong type (r16's id is an object).
      const unread = 'no identifiers';
      expect(
        rejections(items).map((r) => [r.line, Object.hasOwn(r, 'identifiers') ? r.identifiers : unread]),
      ).to.deep.equal([
        [4, ids('r4', 'a4')],
        [5, ids('r5', 'a5')],
        [6, ids('r6', 'a6')],
        [7, ids('r7', 'a7')],
        [8, ids('r8', 'a8')],
        [9, ids(null, null)],
        [10, ids(null, null)],
        [11, unread],
        [12, unread],
        [13, ids('r13', 'a13')],
        [14, ids('r14', 'a14')],
        [15, ids('r15', 'a15')],
        [16, unread],
        [17, ids('r17', 'a17')],
        [18, ids('r18', 'a18')],
      ]);
    });
  });

  describe('configuration', () => {
    it('refuses a config that names no reference field, before any request', async () => {
      const error = await failure(collect(authed({ fields: { amount: 'amount' } })));
      expect(error.code).to.equal('config');
      expect(fake.requests).to.equal(0);
    });

    it('keeps a path part of baseUrl', async () => {
      const scripted = await startScripted((_req, res) => json(res, 200, '{"data": []}'));
      try {
        await collect(
          configFor(`${scripted.url}/api/`, { path: 'v1/settlements', pagination: { type: 'none' } }),
        );
        expect(scripted.requests[0].pathname).to.equal('/api/v1/settlements');
      } finally {
        await scripted.close();
      }
    });
  });
});

describe('lookupByReference', function () {
  this.timeout(10_000);
  let fake: FakePartner;

  beforeEach(async () => {
    fake = await startFakePartner({ token: TOKEN });
    fake.seed([
      ...seedRows,
      { reference: 'order-1', amount: '10.00', currency: 'BRL', executedAt: '2024-03-01T10:05:00Z' },
      { reference: 'a/b c?', amount: '7.00', currency: 'BRL', executedAt: '2024-03-01T10:05:00Z' },
    ]);
  });

  afterEach(async () => {
    await fake.close();
  });

  const options = { partner: 'acme-pay', timezone: 'UTC', env };
  /** The fake's own answer for a reference it never charged: 404 `{ "error": "not_found" }`. */
  const FAKE_NOT_FOUND = { field: 'error', equals: 'not_found' };
  const lookupConfig = (path: string, extra: Partial<ApiSourceConfig> = {}) =>
    configFor(fake.url, {
      path: '',
      auth: { env: TOKEN_ENV },
      lookup: { path, notFound: FAKE_NOT_FOUND },
      ...extra,
    });

  it('finds every execution of a reference (here: charged twice)', async () => {
    const found = await lookupByReference(
      lookupConfig('/v1/charges?reference={reference}'),
      'order-1',
      options,
    );
    expect(found.rejected).to.deep.equal([]);
    expect(found.rows.map((row) => [row.line, row.partnerReference, row.amount])).to.deep.equal([
      [1, 'ch_1', '10.00'],
      [2, 'ch_6', '10.00'],
    ]);
  });

  it('URL-encodes the reference', async () => {
    const byQuery = await lookupByReference(
      lookupConfig('/v1/charges?reference={reference}'),
      'a/b c?',
      options,
    );
    expect(byQuery.rows.map((row) => row.reference)).to.deep.equal(['a/b c?']);
    const byPath = await lookupByReference(lookupConfig('/v1/references/{reference}'), 'a/b c?', options);
    expect(byPath.rows.map((row) => row.reference)).to.deep.equal(['a/b c?']);
  });

  it("answers zero rows on the partner's own 404 for an unknown reference (lookup.notFound)", async () => {
    const found = await lookupByReference(lookupConfig('/v1/references/{reference}'), 'order-404', options);
    expect(found).to.deep.equal({ rows: [], rejected: [] });
  });

  it("refuses a JSON 404 that is not that answer: a wrong path, answered by the API's 'no such endpoint'", async () => {
    const error = await failure(
      lookupByReference(lookupConfig('/v1/referencez/{reference}'), 'order-404', options),
    );
    expect(error.code).to.equal('http_status');
    expect(error.status).to.equal(404);
    expect(error.message).to.include(
      'not with its answer for an unknown reference (lookup.notFound: error = "not_found")',
    );
  });

  it('without lookup.notFound, no 404 means "never executed": it fails, naming the option', async () => {
    const error = await failure(
      lookupByReference(
        configFor(fake.url, {
          path: '',
          auth: { env: TOKEN_ENV },
          lookup: { path: '/v1/references/{reference}' },
        }),
        'order-404',
        options,
      ),
    );
    expect(error.status).to.equal(404);
    expect(error.message).to.include('set lookup.notFound');
  });

  it('matches numbers as numbers and strings as strings, by dot path, or an empty body', async () => {
    const answers = [
      '{"code": 20404, "message": "not found"}',
      '{"code": "20404"}',
      '',
      '{"error": {"code": "resource_missing"}}',
    ];
    let next = 0;
    const scripted = await startScripted((_req, res) => {
      const body = answers[next++ % answers.length];
      res.writeHead(404, body === '' ? {} : { 'content-type': 'application/json' });
      res.end(body);
    });
    const ask = (notFound: NonNullable<NonNullable<ApiSourceConfig['lookup']>['notFound']>) =>
      lookupByReference(
        configFor(scripted.url, { path: '', lookup: { path: '/v1/t/{reference}', notFound } }),
        'r1',
        options,
      ).then(
        () => 'no such reference',
        (error: PartnerApiError) => `refused (${error.status})`,
      );
    try {
      // Each ask takes the next answer: number, string, empty, nested.
      expect(await ask({ field: 'code', equals: 20404 })).to.equal('no such reference');
      expect(await ask({ field: 'code', equals: 20404 })).to.equal('refused (404)');
      expect(await ask({ field: 'code', equals: 20404 })).to.equal('refused (404)');
      expect(await ask({ field: 'error.code', equals: 'resource_missing' })).to.equal('no such reference');
      expect(await ask({ emptyBody: true })).to.equal('refused (404)');
      expect(await ask({ field: 'code', equals: '20404' })).to.equal('no such reference');
      expect(await ask({ emptyBody: true })).to.equal('no such reference');
      expect(await ask({ field: 'error', equals: 'resource_missing' })).to.equal('refused (404)');
    } finally {
      await scripted.close();
    }
  });

  it('refuses a lookup.notFound that cannot be matched, before asking anything', async () => {
    for (const notFound of [
      { field: '', equals: 'x' },
      { field: 'a..b', equals: 'x' },
      { field: 'code' },
      { emptyBody: false },
      { field: 'code', equals: 1, extra: 2 },
    ]) {
      const error = await failure(
        lookupByReference(
          configFor(fake.url, {
            path: '',
            auth: { env: TOKEN_ENV },
            lookup: { path: '/v1/references/{reference}', notFound: notFound as never },
          }),
          'order-1',
          options,
        ),
      );
      expect(error.code, JSON.stringify(notFound)).to.equal('config');
      expect(error.message, JSON.stringify(notFound)).to.include('lookup.notFound');
    }
  });

  it('refuses a 404 that is an HTML page: it may not come from the partner API', async () => {
    fake.failNext(1, { kind: 'status', status: 404, body: '<html>Not Found</html>' });
    const error = await failure(
      lookupByReference(lookupConfig('/v1/references/{reference}'), 'order-1', options),
    );
    expect(error.status).to.equal(404);
    expect(error.message).to.include('not JSON');
  });

  it('reads a single-object answer when itemsField is empty', async () => {
    const scripted = await startScripted((_req, res) =>
      json(
        res,
        200,
        '{"id": "t9", "reference": "r9", "amount": "5.00", "currency": "BRL", "executed_at": "2024-03-01T10:00:00Z"}',
      ),
    );
    try {
      const found = await lookupByReference(
        configFor(scripted.url, {
          path: '',
          lookup: { path: '/v1/transactions/{reference}', itemsField: '' },
        }),
        'r9',
        options,
      );
      expect(found.rows.map((row) => row.partnerReference)).to.deep.equal(['t9']);
      expect(scripted.requests[0].pathname).to.equal('/v1/transactions/r9');
    } finally {
      await scripted.close();
    }
  });

  it('retries and fails like the listing, without leaking the token', async () => {
    fake.failNext(1, { kind: 'status', status: 503 });
    const found = await lookupByReference(
      lookupConfig('/v1/charges?reference={reference}'),
      'order-2',
      options,
    );
    expect(found.rows).to.have.length(1);
    const error = await failure(
      lookupByReference(lookupConfig('/v1/charges?reference={reference}'), 'order-2', {
        ...options,
        env: { [TOKEN_ENV]: 'nope' },
      }),
    );
    expect(error.message).to.include(`check the token in env ${TOKEN_ENV}`);
    expectNoToken(error);
  });

  it('needs a lookup path with a {reference} placeholder', async () => {
    const missing = await failure(lookupByReference(configFor(fake.url), 'r', options));
    expect(missing.code).to.equal('config');
    const noPlaceholder = await failure(lookupByReference(lookupConfig('/v1/charges'), 'r', options));
    expect(noPlaceholder.message).to.include('{reference}');
  });

  it('rejects bad items in the answer instead of failing', async () => {
    fake.seed([{ reference: 'bad-1', amount: 'abc', currency: 'BRL', executedAt: '2024-03-01T10:00:00Z' }]);
    const found = await lookupByReference(
      lookupConfig('/v1/charges?reference={reference}'),
      'bad-1',
      options,
    );
    expect(found.rows).to.deep.equal([]);
    expect(found.rejected).to.have.length(1);
    expect(found.rejected[0]).to.include({ line: 1, field: 'amount' });
  });
});

describe('parseJsonKeepingNumbers', () => {
  it('keeps the source text of numbers and leaves strings alone', () => {
    const parsed = parseJsonKeepingNumbers(
      '{"a": 0.10000000000000001, "b": [-1, 2e5, 123456789012345678901], "c": "12 \\"3\\" 4", "d": true}',
    );
    expect(parsed).to.deep.equal({
      a: new JsonNumber('0.10000000000000001'),
      b: [new JsonNumber('-1'), new JsonNumber('2e5'), new JsonNumber('123456789012345678901')],
      c: '12 "3" 4',
      d: true,
    });
  });

  it('refuses what JSON.parse refuses, even where a rewritten number would have been valid', () => {
    for (const text of [
      '{1: 2}',
      '[01]',
      '[1.]',
      '[-]',
      '[.5]',
      '[1 2]',
      '{"a": 1',
      '[NaN]',
      '[-Infinity]',
      '',
    ]) {
      expect(() => parseJsonKeepingNumbers(text), text).to.throw(SyntaxError);
    }
  });
});
