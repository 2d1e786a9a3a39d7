import { expect } from 'chai';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Pool } from 'pg';
import { createReviewServer, type ReviewServerOptions } from '../../src/review/createReviewServer.js';
import { SECURITY_HEADERS } from '../../src/review/registerAuth.js';
import { SignInThrottle, throttleKey } from '../../src/review/signInThrottle.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

const TOKEN = 'throttle-test-token-0123456789abcdef';
const MINUTE = 60_000;
const WINDOW = 15 * MINUTE;
const LOOPBACK = '127.0.0.1';

/** A different wrong token each time: repeating one would count once. */
const wrong = (i: number | string) => `wrong-guess-${i}-0123456789abcdef`;

interface Clock {
  now: number;
}

describe('review server: sign-in throttling (fastify inject, real database)', () => {
  const db = useFreshDatabase('review-throttle');
  let sql: Pool;
  const servers: FastifyInstance[] = [];

  before(() => {
    sql = sqlPool(db.url);
  });
  after(async () => {
    for (const server of servers) await server.close();
    await sql?.end();
  });

  /** A server with its own throttle, on a clock the test moves instead of sleeping. */
  async function server(
    options: Partial<ReviewServerOptions> = {},
  ): Promise<{ app: FastifyInstance; clock: Clock }> {
    const clock: Clock = { now: Date.parse('2025-03-10T09:00:00Z') };
    const app = createReviewServer({ pool: sql, token: TOKEN, now: () => clock.now, ...options });
    servers.push(app);
    await app.ready();
    return { app, clock };
  }

  function signIn(
    app: FastifyInstance,
    token: string,
    options: { from?: string; next?: string; headers?: Record<string, string> } = {},
  ): Promise<LightMyRequestResponse> {
    return app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress: options.from ?? LOOPBACK,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...options.headers },
      payload: new URLSearchParams({ token, next: options.next ?? '/' }).toString(),
    });
  }

  function bearer(
    app: FastifyInstance,
    token: string,
    options: { from?: string; url?: string; scheme?: string } = {},
  ): Promise<LightMyRequestResponse> {
    return app.inject({
      method: 'GET',
      url: options.url ?? '/api/discrepancies',
      remoteAddress: options.from ?? LOOPBACK,
      headers: { authorization: `${options.scheme ?? 'Bearer'} ${token}` },
    });
  }

  async function failForm(app: FastifyInstance, count: number, from = LOOPBACK, label = 'f'): Promise<void> {
    for (let i = 0; i < count; i++) {
      const response = await signIn(app, wrong(`${label}${i}`), { from });
      expect(response.statusCode, `wrong form token ${i + 1}`).to.equal(401);
    }
  }

  async function failBearer(
    app: FastifyInstance,
    count: number,
    from = LOOPBACK,
    label = 'b',
  ): Promise<void> {
    for (let i = 0; i < count; i++) {
      const response = await bearer(app, wrong(`${label}${i}`), { from });
      expect(response.statusCode, `wrong bearer token ${i + 1}`).to.equal(401);
    }
  }

  function expectThrottled(response: LightMyRequestResponse, retryAfterSeconds: number, what = ''): void {
    expect(response.statusCode, what).to.equal(429);
    expect(response.headers['retry-after'], what).to.equal(String(retryAfterSeconds));
    expect(response.headers['set-cookie'], what).to.equal(undefined);
    expect(response.body, what).not.to.contain(TOKEN);
  }

  it('after 10 different wrong tokens on the form, the next attempt is 429 with Retry-After, even with the right token', async () => {
    const { app } = await server();
    await failForm(app, 10);

    const form = await signIn(app, TOKEN, { next: '/report' });
    expectThrottled(form, 900, 'form');
    expect(form.headers['content-type']).to.match(/^text\/html/);
    expect(form.body).to.contain('Too many wrong tokens were tried from your address. Wait 15 minutes');
    expect(form.body).to.contain('name="next" value="/report"');

    const api = await bearer(app, TOKEN);
    expectThrottled(api, 900, 'api');
    expect(api.json()).to.deep.equal({
      error: {
        code: 'TOO_MANY_ATTEMPTS',
        message: 'Too many wrong tokens were tried from your address. Wait 15 minutes, then try again.',
      },
    });
    const page = await bearer(app, TOKEN, { url: '/' });
    expectThrottled(page, 900, 'page with a bearer token');
    expect(page.body).to.contain('Wait 15 minutes');
  });

  it('wrong bearer tokens count the same, and together with the form: the right token is then refused both ways', async () => {
    const bearerOnly = (await server()).app;
    await failBearer(bearerOnly, 10);
    expectThrottled(await bearer(bearerOnly, TOKEN), 900, 'bearer after 10 bearer failures');
    expectThrottled(await signIn(bearerOnly, TOKEN), 900, 'form after 10 bearer failures');

    const mixed = (await server()).app;
    await failForm(mixed, 5);
    await failBearer(mixed, 4);
    expect((await bearer(mixed, TOKEN)).statusCode, 'nine failures: still in').to.equal(200);
    await failBearer(mixed, 1, LOOPBACK, 'last');
    expectThrottled(await bearer(mixed, TOKEN), 900, 'bearer after 5 + 5');
    expectThrottled(await signIn(mixed, TOKEN), 900, 'form after 5 + 5');
  });

  it('counts only tokens that were compared, and each different one once (a stale token in a script locks nobody out)', async () => {
    const { app } = await server();
    for (let i = 0; i < 30; i++) {
      expect((await bearer(app, TOKEN, { scheme: 'Basic' })).statusCode).to.equal(401);
      expect((await bearer(app, '', { scheme: 'Bearer' })).statusCode).to.equal(401);
      expect((await bearer(app, wrong('stale'))).statusCode).to.equal(401);
      expect((await signIn(app, wrong('stale'))).statusCode).to.equal(401);
      expect((await signIn(app, '')).statusCode).to.equal(401);
    }
    expect((await bearer(app, TOKEN)).statusCode, 'one different wrong token so far').to.equal(200);
    await failForm(app, 9);
    expectThrottled(await bearer(app, TOKEN), 900, 'ten different wrong tokens');
  });

  it('another address is unaffected, and a session signed in from the throttled address keeps working', async () => {
    const { app } = await server();
    const login = await signIn(app, TOKEN);
    expect(login.statusCode).to.equal(303);
    const cookie = String(login.headers['set-cookie']).split(';')[0];
    await failForm(app, 10);
    expectThrottled(await signIn(app, TOKEN), 900);

    const session = await app.inject({ method: 'GET', url: '/', headers: { cookie } });
    expect(session.statusCode, 'a signed-in person at the throttled address').to.equal(200);

    const elsewhere = '192.0.2.7';
    expect((await signIn(app, TOKEN, { from: elsewhere })).statusCode).to.equal(303);
    expect((await bearer(app, TOKEN, { from: elsewhere })).statusCode).to.equal(200);
    expectThrottled(await signIn(app, TOKEN), 900, 'a success elsewhere does not unlock this address');
  });

  it('a sliding window: Retry-After counts down as failures age, and after the window the right token works again', async () => {
    const { app, clock } = await server();
    await failForm(app, 5);
    clock.now += 5 * MINUTE;
    await failBearer(app, 5);
    expectThrottled(await signIn(app, TOKEN), 600, 'the oldest failures are 5 minutes old');

    clock.now += 10 * MINUTE - 1_000;
    const last = await bearer(app, TOKEN);
    expectThrottled(last, 1, 'one second before the first five expire');
    expect(last.json().error.message).to.contain('Wait 1 second,');

    clock.now += 1_000;
    expect((await signIn(app, TOKEN)).statusCode, 'the first five have aged out').to.equal(303);
    expect((await bearer(app, TOKEN)).statusCode).to.equal(200);
    await failForm(app, 5, LOOPBACK, 'again');
    expectThrottled(await signIn(app, TOKEN), 300, 'five old and five new failures');

    clock.now += WINDOW;
    expect((await signIn(app, TOKEN)).statusCode, 'a whole window later').to.equal(303);
    expect((await bearer(app, TOKEN)).statusCode).to.equal(200);
  });

  it('the right token before the limit signs in; it does not wipe the failures before it', async () => {
    const { app } = await server();
    await failForm(app, 9);
    const login = await signIn(app, TOKEN, { next: '/report' });
    expect(login.statusCode).to.equal(303);
    expect(login.headers.location).to.equal('/report');
    expect(String(login.headers['set-cookie'])).to.match(/^il_review_session=/);
    await failBearer(app, 1);
    expectThrottled(await signIn(app, TOKEN), 900);
  });

  it('the 429 page escapes what was sent and carries the security headers, as the JSON answer does', async () => {
    const { app } = await server();
    await failForm(app, 10);
    const hostileNext = '/"><script>alert(1)</script>';
    const page = await signIn(app, '<script>alert(2)</script>', {
      next: hostileNext,
      headers: { origin: 'http://localhost:80' },
    });
    expectThrottled(page, 900);
    expect(page.body).not.to.match(/<script/i);
    expect(page.body).not.to.contain('alert(2)');
    expect(page.body).to.contain('value="/&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    const api = await bearer(app, '<script>alert(3)</script>');
    expectThrottled(api, 900);
    expect(api.body).not.to.contain('alert(3)');
    for (const response of [page, api]) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(response.headers[name], name).to.equal(value);
    }
  });

  it('IPv6 addresses count by /64, IPv4-mapped ones as their IPv4 address', async () => {
    const { app } = await server();
    await failForm(app, 10, '2001:db8:1:2::5');
    expectThrottled(await signIn(app, TOKEN, { from: '2001:db8:1:2:ffff::9' }), 900, 'same /64');
    expect((await signIn(app, TOKEN, { from: '2001:db8:1:3::5' })).statusCode, 'next /64').to.equal(303);

    await failBearer(app, 10, '::ffff:198.51.100.4');
    expectThrottled(await bearer(app, TOKEN, { from: '198.51.100.4' }), 900, 'IPv4-mapped');
  });

  it('behind a proxy, failures count against the address the proxy saw, whatever the client wrote in X-Forwarded-For', async () => {
    const { app } = await server({ trustProxy: true });
    const proxy = '10.0.0.2';
    const via = (client: string, spoofed: string) => ({
      from: proxy,
      headers: { 'x-forwarded-for': `${spoofed}, ${client}`, 'x-forwarded-proto': 'https' },
    });
    for (let i = 0; i < 10; i++) {
      const response = await signIn(app, wrong(i), via('203.0.113.9', `198.51.100.${i}`));
      expect(response.statusCode, `spoofed guess ${i + 1}`).to.equal(401);
    }
    expectThrottled(await signIn(app, TOKEN, via('203.0.113.9', '198.51.100.200')), 900, 'spoofed');
    const other = await signIn(app, TOKEN, { from: proxy, headers: { 'x-forwarded-for': '203.0.113.10' } });
    expect(other.statusCode, 'another client through the same proxy').to.equal(303);
  });

  it('the table stays bounded: past maxAddresses the address with the oldest failure is forgotten', async () => {
    const { app } = await server({ signInThrottle: { maxFailures: 2, maxAddresses: 3 } });
    await failForm(app, 2, '192.0.2.1');
    expectThrottled(await signIn(app, TOKEN, { from: '192.0.2.1' }), 900);
    for (const from of ['192.0.2.2', '192.0.2.3', '192.0.2.4']) await failForm(app, 1, from);
    expect((await signIn(app, TOKEN, { from: '192.0.2.1' })).statusCode, 'forgotten').to.equal(303);
  });

  it('refuses options that make no sense, saying which', () => {
    for (const signInThrottle of [{ maxFailures: 0 }, { windowMs: 1.5 }, { maxAddresses: Number.NaN }]) {
      expect(() => createReviewServer({ pool: sql, token: TOKEN, signInThrottle }))
        .to.throw(RangeError)
        .with.property('message')
        .that.matches(/^signInThrottle\.\w+ must be a whole number of at least 1/);
    }
  });
});

describe('sign-in throttle: the table and the addresses', () => {
  it('holds at most maxAddresses (10,000 by default) and sweeps expired addresses as failures arrive', () => {
    const clock = { now: 0 };
    const throttle = new SignInThrottle({}, () => clock.now);
    for (let i = 0; i < 25_000; i++)
      throttle.recordFailure(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 'x');
    expect(throttle.size).to.equal(10_000);
    clock.now += WINDOW;
    throttle.recordFailure('192.0.2.1', 'x');
    expect(throttle.size).to.equal(1);
  });

  it('remembers at most maxFailures failures per address and keeps the lock from the oldest of them', () => {
    const clock = { now: 0 };
    const throttle = new SignInThrottle({ maxFailures: 3, windowMs: 1_000 }, () => clock.now);
    expect(throttle.recordFailure('a', '1')).to.deep.equal({ counted: true, retryAfterMs: 0 });
    expect(throttle.recordFailure('a', '1')).to.deep.equal({ counted: false, retryAfterMs: 0 });
    clock.now = 100;
    throttle.recordFailure('a', '2');
    clock.now = 200;
    expect(throttle.recordFailure('a', '3')).to.deep.equal({ counted: true, retryAfterMs: 800 });
    expect(throttle.recordFailure('a', '4')).to.deep.equal({ counted: false, retryAfterMs: 800 });
    clock.now = 1_000;
    expect(throttle.retryAfterMs('a')).to.equal(0);
    expect(throttle.retryAfterMs('b')).to.equal(0);
  });

  it('keys IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 by /64', () => {
    expect(throttleKey('203.0.113.5')).to.equal('203.0.113.5');
    expect(throttleKey('::ffff:203.0.113.5')).to.equal('203.0.113.5');
    expect(throttleKey('::FFFF:cb00:7105')).to.equal('203.0.113.5');
    expect(throttleKey('2001:DB8:0:0:1::1')).to.equal('2001:db8:0:0::/64');
    expect(throttleKey('2001:db8::ffff:1:2')).to.equal('2001:db8:0:0::/64');
    expect(throttleKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(throttleKey('::1')).to.equal('0:0:0:0::/64');
    expect(throttleKey('64:ff9b::192.0.2.1')).to.equal('64:ff9b:0:0::/64');
    expect(throttleKey('not an address')).to.equal('not an address');
  });
});
