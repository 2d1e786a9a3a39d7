import { request } from 'node:http';
import { expect } from 'chai';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

/**
 * A bare node:http client, so the tests see exactly what the socket did (ECONNRESET, silence) with no
 * retrying library in between. No keep-alive agent: each call is its own connection.
 */
function call(
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        agent: false,
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 3000, () =>
      req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function callError(url: string, options: Parameters<typeof call>[1]): Promise<NodeJS.ErrnoException> {
  try {
    await call(url, options);
  } catch (error) {
    return error as NodeJS.ErrnoException;
  }
  throw new Error('expected the request to fail');
}

const chargeBody = { reference: 'order-1', amount: '12.50', currency: 'BRL' };

describe('fake partner', function () {
  this.timeout(10_000);
  let fake: FakePartner;

  afterEach(async () => {
    await fake?.close();
  });

  describe('charges', () => {
    beforeEach(async () => {
      fake = await startFakePartner({ now: () => new Date('2024-03-01T12:00:00.000Z') });
    });

    it('executes a charge and answers 201 with the amount as a string', async () => {
      const answer = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(answer.status).to.equal(201);
      expect(answer.json).to.deep.equal({
        id: 'ch_1',
        reference: 'order-1',
        amount: '12.50',
        currency: 'BRL',
        executed_at: '2024-03-01T12:00:00.000Z',
      });
      expect(fake.executions).to.have.length(1);
      expect(fake.executions[0].amount).to.equal('12.50');
      expect(fake.requests).to.equal(1);
    });

    it('charges again on every request when it does not honour idempotency keys', async () => {
      const headers = { 'idempotency-key': 'order-1:charge' };
      await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody, headers });
      await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody, headers });
      expect(fake.executions.map((e) => e.id)).to.deep.equal(['ch_1', 'ch_2']);
      expect(fake.executions.map((e) => e.idempotencyKey)).to.deep.equal([
        'order-1:charge',
        'order-1:charge',
      ]);
    });

    it('refuses amounts that are JSON numbers and incomplete payloads with 422', async () => {
      const numeric = await call(`${fake.url}/v1/charges`, {
        method: 'POST',
        body: { ...chargeBody, amount: 12.5 },
      });
      expect(numeric.status).to.equal(422);
      const noReference = await call(`${fake.url}/v1/charges`, {
        method: 'POST',
        body: { amount: '1.00', currency: 'BRL' },
      });
      expect(noReference.status).to.equal(422);
      const lowerCurrency = await call(`${fake.url}/v1/charges`, {
        method: 'POST',
        body: { ...chargeBody, currency: 'brl' },
      });
      expect(lowerCurrency.status).to.equal(422);
      expect(fake.executions).to.have.length(0);
    });
  });

  describe('with honoursKey', () => {
    beforeEach(async () => {
      fake = await startFakePartner({ honoursKey: true });
    });

    it('replays the first charge for the same key and payload', async () => {
      const headers = { 'idempotency-key': 'k1' };
      const first = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody, headers });
      const second = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody, headers });
      expect(second.status).to.equal(201);
      expect(second.json).to.deep.equal(first.json);
      expect(second.headers['idempotent-replayed']).to.equal('true');
      expect(fake.executions).to.have.length(1);
    });

    it('answers 409 for the same key with a different payload, and still charges without a key', async () => {
      const headers = { 'idempotency-key': 'k1' };
      await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody, headers });
      const conflict = await call(`${fake.url}/v1/charges`, {
        method: 'POST',
        body: { ...chargeBody, amount: '99.00' },
        headers,
      });
      expect(conflict.status).to.equal(409);
      await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(fake.executions).to.have.length(2);
    });
  });

  describe('auth', () => {
    beforeEach(async () => {
      fake = await startFakePartner({ token: 'fake-token' });
    });

    it('answers 401 without the bearer token and serves with it', async () => {
      const anonymous = await call(`${fake.url}/v1/settlements`);
      expect(anonymous.status).to.equal(401);
      const wrong = await call(`${fake.url}/v1/settlements`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).to.equal(401);
      const charge = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(charge.status).to.equal(401);
      expect(fake.executions).to.have.length(0);
      const ok = await call(`${fake.url}/v1/settlements`, {
        headers: { authorization: 'Bearer fake-token' },
      });
      expect(ok.status).to.equal(200);
    });
  });

  describe('listings and lookups', () => {
    beforeEach(async () => {
      fake = await startFakePartner({ pageSize: 2 });
      fake.seed([
        { reference: 'r3', amount: '3.00', currency: 'BRL', executedAt: '2024-03-01T10:00:00Z' },
        { reference: 'r1', amount: '1.00', currency: 'BRL', executedAt: new Date('2024-03-01T08:00:00Z') },
        { reference: 'r2', amount: '2.00', currency: 'USD', executedAt: '2024-03-01T09:00:00Z' },
        { id: 'x9', reference: 'r4', amount: '4.00', currency: 'BRL', executedAt: '2024-03-02T00:00:00Z' },
        { reference: 'r1', amount: '1.00', currency: 'BRL', executedAt: '2024-03-01T11:00:00Z' },
      ]);
    });

    it('lists executions in execution order with cursor pagination', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `?cursor=${cursor}` : '';
        const answer = await call(`${fake.url}/v1/settlements${query}`);
        const body = answer.json as { data: Array<{ reference: string }>; next_cursor: string | null };
        seen.push(...body.data.map((row) => row.reference));
        cursor = body.next_cursor;
        pages += 1;
      } while (cursor);
      expect(seen).to.deep.equal(['r1', 'r2', 'r3', 'r1', 'r4']);
      expect(pages).to.equal(3);
    });

    it('filters by the half-open window [from, to) and honours limit', async () => {
      const answer = await call(
        `${fake.url}/v1/settlements?from=2024-03-01T09:00:00Z&to=2024-03-01T11:00:00Z&limit=10`,
      );
      const body = answer.json as {
        data: Array<{ reference: string; amount: string }>;
        next_cursor: string | null;
      };
      expect(body.data.map((row) => row.reference)).to.deep.equal(['r2', 'r3']);
      expect(body.data[0].amount).to.equal('2.00');
      expect(body.next_cursor).to.equal(null);
    });

    it('supports page pagination and rejects bad parameters with 400', async () => {
      const page2 = await call(`${fake.url}/v1/settlements?page=2&size=2`);
      expect(page2.json).to.deep.include({ page: 2, size: 2, total: 5 });
      expect(
        (page2.json as { data: Array<{ reference: string }> }).data.map((r) => r.reference),
      ).to.deep.equal(['r3', 'r1']);
      expect((await call(`${fake.url}/v1/settlements?from=yesterday`)).status).to.equal(400);
      expect((await call(`${fake.url}/v1/settlements?cursor=bogus`)).status).to.equal(400);
      expect((await call(`${fake.url}/v1/settlements?page=0`)).status).to.equal(400);
    });

    it('looks charges up by reference, and answers 404 on the path form when there is none', async () => {
      const byQuery = await call(`${fake.url}/v1/charges?reference=r1`);
      expect((byQuery.json as { data: unknown[] }).data).to.have.length(2);
      const none = await call(`${fake.url}/v1/charges?reference=nope`);
      expect(none.json).to.deep.equal({ data: [] });
      const byPath = await call(`${fake.url}/v1/references/r4`);
      expect(byPath.json).to.deep.equal({
        data: [
          { id: 'x9', reference: 'r4', amount: '4.00', currency: 'BRL', executed_at: '2024-03-02T00:00:00Z' },
        ],
      });
      expect((await call(`${fake.url}/v1/references/nope`)).status).to.equal(404);
      expect((await call(`${fake.url}/v1/unknown`)).status).to.equal(404);
    });
  });

  describe('faults', () => {
    beforeEach(async () => {
      fake = await startFakePartner();
    });

    it('status: answers the status with Retry-After and does not execute unless asked', async () => {
      fake.failNext(1, { kind: 'status', status: 429, retryAfter: 7 });
      const limited = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(limited.status).to.equal(429);
      expect(limited.headers['retry-after']).to.equal('7');
      expect(fake.executions).to.have.length(0);

      fake.failNext(1, { kind: 'status', status: 500, body: 'oops', execute: true });
      const failed = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(failed.status).to.equal(500);
      expect(failed.text).to.equal('oops');
      expect(fake.executions).to.have.length(1);

      const normal = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(normal.status).to.equal(201);
    });

    it('reset-before: the client sees ECONNRESET and nothing was executed', async () => {
      fake.failNext(1, { kind: 'reset-before' });
      const error = await callError(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(error.code).to.equal('ECONNRESET');
      expect(fake.executions).to.have.length(0);
    });

    it('reset-after: the charge is executed but the client sees ECONNRESET', async () => {
      fake.failNext(1, { kind: 'reset-after' });
      const error = await callError(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(error.code).to.equal('ECONNRESET');
      expect(fake.executions).to.have.length(1);
      expect(fake.executions[0].reference).to.equal('order-1');
    });

    it('delay: executes at once and answers late', async () => {
      fake.failNext(1, { kind: 'delay', ms: 400 });
      const started = Date.now();
      const pending = call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(fake.executions, 'executed before answering').to.have.length(1);
      const answer = await pending;
      expect(answer.status).to.equal(201);
      expect(Date.now() - started).to.be.at.least(380);
    });

    it('hang: executes and never answers; close() still ends the connection', async () => {
      fake.failNext(1, { kind: 'hang' });
      const error = await callError(`${fake.url}/v1/charges`, {
        method: 'POST',
        body: chargeBody,
        timeoutMs: 300,
      });
      expect(error.code).to.equal('CLIENT_TIMEOUT');
      expect(fake.executions).to.have.length(1);

      fake.failNext(1, { kind: 'hang' });
      const hanging = callError(`${fake.url}/v1/settlements`, { timeoutMs: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = Date.now();
      await fake.close();
      const closedError = await hanging;
      expect(closedError.code).to.equal('ECONNRESET');
      expect(Date.now() - started).to.be.below(1000);
      await fake.close();
    });

    it('garbage: executes and answers 200 with the given body', async () => {
      fake.failNext(1, { kind: 'garbage', body: '<html>maintenance</html>' });
      const answer = await call(`${fake.url}/v1/charges`, { method: 'POST', body: chargeBody });
      expect(answer.status).to.equal(200);
      expect(answer.headers['content-type']).to.equal('text/html');
      expect(answer.text).to.equal('<html>maintenance</html>');
      expect(fake.executions).to.have.length(1);
    });

    it('failNext counts requests and takes precedence over setFault, which sees each request', async () => {
      const seen: string[] = [];
      fake.setFault((req) => {
        seen.push(`${req.n} ${req.method} ${req.path}`);
        return req.path === '/v1/settlements' ? { kind: 'status', status: 503 } : undefined;
      });
      fake.failNext(2, { kind: 'status', status: 400 });
      expect((await call(`${fake.url}/v1/settlements`)).status).to.equal(400);
      expect((await call(`${fake.url}/v1/charges?reference=x`)).status).to.equal(400);
      expect((await call(`${fake.url}/v1/settlements`)).status).to.equal(503);
      expect((await call(`${fake.url}/v1/charges?reference=x`)).status).to.equal(200);
      expect(seen).to.deep.equal(['3 GET /v1/settlements', '4 GET /v1/charges']);
      fake.setFault(undefined);
      expect((await call(`${fake.url}/v1/settlements`)).status).to.equal(200);
      expect(fake.requests).to.equal(5);
    });
  });
});
