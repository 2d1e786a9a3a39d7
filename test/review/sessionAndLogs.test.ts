import { Writable } from 'node:stream';
import { expect } from 'chai';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Pool } from 'pg';
import pino from 'pino';
import { createReviewServer, type ReviewServerOptions } from '../../src/review/createReviewServer.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

const TOKEN = 'session-test-token-0123456789abcdef';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('review server: absolute session lifetime, HSTS behind a TLS proxy, access logs without query strings', () => {
  const db = useFreshDatabase('review-sessions');
  let sql: Pool;
  const servers: FastifyInstance[] = [];

  before(() => {
    sql = sqlPool(db.url);
  });
  after(async () => {
    for (const server of servers) await server.close();
    await sql?.end();
  });

  async function server(options: Partial<ReviewServerOptions> = {}) {
    const clock = { now: Date.parse('2025-03-10T09:00:00Z') };
    const app = createReviewServer({ pool: sql, token: TOKEN, now: () => clock.now, ...options });
    servers.push(app);
    await app.ready();
    return { app, clock };
  }

  async function signIn(app: FastifyInstance, headers: Record<string, string> = {}): Promise<string> {
    const response = await app.inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: new URLSearchParams({ token: TOKEN, next: '/' }).toString(),
    });
    expect(response.statusCode).to.equal(303);
    const cookie = String(response.headers['set-cookie']);
    return cookie.split(';')[0];
  }

  const list = (app: FastifyInstance, cookie: string): Promise<LightMyRequestResponse> =>
    app.inject({ method: 'GET', url: '/', headers: { cookie } });

  it('a session in constant use still ends at its absolute lifetime (default 12 h), the idle one aside', async () => {
    const { app, clock } = await server({ sessionTtlMs: HOUR });
    const cookie = await signIn(app);
    // Used every 50 minutes: the idle limit (1 h) never trips.
    for (let elapsed = 50 * MINUTE; elapsed < 12 * HOUR; elapsed += 50 * MINUTE) {
      clock.now += 50 * MINUTE;
      expect((await list(app, cookie)).statusCode, `after ${elapsed / MINUTE} min`).to.equal(200);
    }
    clock.now = Date.parse('2025-03-10T09:00:00Z') + 12 * HOUR;
    const ended = await list(app, cookie);
    expect(ended.statusCode).to.equal(303);
    expect(ended.headers.location).to.equal('/login?next=%2F');
    // Signing in again starts a fresh lifetime.
    expect((await list(app, await signIn(app))).statusCode).to.equal(200);
  });

  it('sessionMaxLifetimeMs is configurable, and the cookie never outlives it', async () => {
    const { app, clock } = await server({ sessionTtlMs: 8 * HOUR, sessionMaxLifetimeMs: 2 * HOUR });
    const login = await app.inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: TOKEN, next: '/' }).toString(),
    });
    expect(String(login.headers['set-cookie'])).to.contain('Max-Age=7200');
    const cookie = String(login.headers['set-cookie']).split(';')[0];
    clock.now += 2 * HOUR - 1000;
    expect((await list(app, cookie)).statusCode).to.equal(200);
    clock.now += 1000;
    expect((await list(app, cookie)).statusCode).to.equal(303);
  });

  it('HSTS only when a trusted proxy received the request over HTTPS', async () => {
    const behindProxy = (await server({ trustProxy: true })).app;
    const direct = (await server()).app;
    const https = { 'x-forwarded-proto': 'https' };
    const overTls = await behindProxy.inject({ method: 'GET', url: '/login', headers: https });
    expect(overTls.headers['strict-transport-security']).to.equal('max-age=31536000');
    const cookie = await signIn(behindProxy, https);
    const page = await behindProxy.inject({ method: 'GET', url: '/', headers: { ...https, cookie } });
    expect(page.statusCode).to.equal(200);
    expect(page.headers['strict-transport-security']).to.equal('max-age=31536000');
    const plain = await behindProxy.inject({ method: 'GET', url: '/login' });
    expect(plain.headers).not.to.have.property('strict-transport-security');
    // Without trustProxy, anybody can send X-Forwarded-Proto: it means nothing.
    const spoofed = await direct.inject({ method: 'GET', url: '/login', headers: https });
    expect(spoofed.headers).not.to.have.property('strict-transport-security');
    const off = (await server({ trustProxy: true, hstsMaxAgeSeconds: 0 })).app;
    const none = await off.inject({ method: 'GET', url: '/login', headers: https });
    expect(none.headers).not.to.have.property('strict-transport-security');
  });

  it('at LOG_LEVEL=info a mistaken ?token= is never logged; each request is, by path', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const { app } = await server({ logger: pino({ level: 'info' }, sink) });
    const secret = `mistaken-${TOKEN}`;
    const cookie = await signIn(app);
    for (const url of [
      `/?token=${secret}`,
      `/export.csv?partner=x&token=${secret}`,
      `/login?token=${secret}`,
      `/api/discrepancies?token=${secret}`,
      `/nowhere?token=${secret}`,
    ])
      await app.inject({ method: 'GET', url, headers: { cookie } });
    // Wrong bearer and refused POST: their warnings name the path too.
    await app.inject({
      method: 'GET',
      url: `/?token=${secret}`,
      headers: { authorization: 'Bearer nope-nope-nope' },
    });
    await app.inject({ method: 'POST', url: `/bulk?token=${secret}`, headers: { cookie } });
    const logged = lines.join('\n');
    expect(logged).not.to.contain('mistaken-');
    expect(logged).not.to.contain(TOKEN);
    expect(logged).not.to.contain('token=');
    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'review: request');
    expect(requests.map((entry) => [entry.method, entry.path, entry.statusCode])).to.deep.equal([
      ['POST', '/login', 303],
      ['GET', '/', 200],
      ['GET', '/export.csv', 200],
      ['GET', '/login', 303],
      ['GET', '/api/discrepancies', 200],
      ['GET', '/nowhere', 404],
      ['GET', '/', 401],
      ['POST', '/bulk', 403],
    ]);
  });
});
