import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { addReviewUser, revokeReviewUser } from '../../src/review/reviewUsers.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type SeededReview, seedReview } from './seedReview.js';

const TOKEN = 'proxy-test-review-token-0123456789';
const PROXY = '10.1.2.3';
const ELSEWHERE = '192.0.2.77';

describe('review server: identity from an authenticating proxy, trusted only from trustProxy addresses', () => {
  const db = useFreshDatabase('review-proxy');
  let sql: Pool;
  let app: FastifyInstance;
  let seeded: SeededReview;

  before(async () => {
    sql = sqlPool(db.url);
    seeded = await seedReview(db.url, sql);
    await addReviewUser(sql, 'pat@example.com', 'resolver');
    await addReviewUser(sql, 'val@example.com', 'viewer');
    app = createReviewServer({
      pool: sql,
      token: TOKEN,
      trustProxy: [PROXY],
      identityHeader: 'X-Forwarded-Email',
    });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await sql?.end();
  });

  const get = (url: string, from: string, email?: string) =>
    app.inject({
      method: 'GET',
      url,
      remoteAddress: from,
      headers: email ? { 'x-forwarded-email': email } : {},
    });

  it('the proxy names a review user: signed in as them, with their role, no token asked', async () => {
    const page = await get('/', PROXY, 'pat@example.com');
    expect(page.statusCode).to.equal(200);
    expect(page.body).to.contain('<strong class="who">pat@example.com</strong>');
    expect(page.body).to.contain('name="action" value="resolve"');
    const viewer = await get('/', PROXY, 'val@example.com');
    expect(viewer.statusCode).to.equal(200);
    expect(viewer.body).not.to.contain('name="action"');
  });

  it('the same header from anywhere else is ignored; an unknown or revoked name is refused', async () => {
    const spoofed = await get('/', ELSEWHERE, 'pat@example.com');
    expect(spoofed.statusCode).to.equal(303);
    expect(spoofed.headers.location).to.match(/^\/login/);
    const unknown = await get('/', PROXY, 'mallory@example.com');
    expect(unknown.statusCode).to.equal(403);
    expect(unknown.body).to.contain('not a user of the review site');
    await addReviewUser(sql, 'gone@example.com', 'resolver');
    expect((await get('/', PROXY, 'gone@example.com')).statusCode).to.equal(200);
    await revokeReviewUser(sql, 'gone@example.com');
    expect((await get('/', PROXY, 'gone@example.com')).statusCode).to.equal(403);
  });

  it("a decision through the proxy is recorded under the proxy's person, and still needs the page's CSRF token", async () => {
    const id = seeded.ids.orphan;
    const page = await get(`/discrepancies/${id}`, PROXY, 'pat@example.com');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1];
    const post = (fields: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: `/discrepancies/${id}/review`,
        remoteAddress: PROXY,
        headers: {
          'x-forwarded-email': 'pat@example.com',
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'http://localhost:80',
        },
        payload: new URLSearchParams(fields).toString(),
      });
    expect((await post({ action: 'acknowledge', note: 'no csrf' })).statusCode).to.equal(403);
    const done = await post({ _csrf: csrf, action: 'acknowledge', note: 'Through the SSO proxy.' });
    expect(done.statusCode).to.equal(303);
    const last = await sql.query(
      'SELECT actor, note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id DESC LIMIT 1',
      [id],
    );
    expect(last.rows[0]).to.deep.equal({ actor: 'pat@example.com', note: 'Through the SSO proxy.' });
  });
  it('refuses identityHeader unless trustProxy lists the proxies: trusted from every peer, anyone could name a person', () => {
    for (const trustProxy of [true, false, undefined]) {
      expect(() =>
        createReviewServer({ pool: sql, token: TOKEN, trustProxy, identityHeader: 'X-Forwarded-Email' }),
      )
        .to.throw(TypeError)
        .with.property('message')
        .that.contains("identityHeader needs trustProxy to list the authenticating proxy's IP addresses");
    }
  });
});
