import { existsSync } from 'node:fs';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { CHROMIUM, launchChromium } from '../support/chromium.js';
import { runCli } from '../support/cliProcess.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type SeededReview, seedReview } from './seedReview.js';

const TOKEN = 'people-test-review-token-0123456789';

/** The token `intent-ledger users add` printed (its second line). */
function tokenOf(stdout: string): string {
  const token = stdout.trim().split('\n').at(-1) ?? '';
  expect(token).to.match(/^ilr_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  return token;
}

describe('review site people in a real headless Chromium: viewers read, resolvers decide as themselves, revocation is immediate', function () {
  this.timeout(90_000);
  const db = useFreshDatabase('review-people');
  let sql: Pool;
  let app: FastifyInstance | undefined;
  let browser: Browser | undefined;
  let base: string;
  let seeded: SeededReview;
  const tokens: Record<string, string> = {};

  const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`    SKIPPED: ${CHROMIUM} does not exist (apt-get install -y chromium)`);
      this.skip();
    }
    sql = sqlPool(db.url);
    seeded = await seedReview(db.url, sql);
    for (const [name, role] of [
      ['vera.viewer', 'viewer'],
      ['rita.resolver', 'resolver'],
      ['otto.resolver', 'resolver'],
    ] as const) {
      const added = await cli('users', 'add', name, '--role', role);
      expect(added.code, added.stderr).to.equal(0);
      expect(added.stdout).to.contain(`added ${name} (${role})`);
      tokens[name] = tokenOf(added.stdout);
    }
    app = createReviewServer({ pool: sql, token: TOKEN });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await sql?.end();
  });

  async function signedIn(name: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.fill('input[name="token"]', tokens[name]);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/`);
    expect(await page.textContent('strong.who')).to.equal(name);
    return { context, page };
  }

  const historyOf = async (id: string) =>
    (
      await sql.query<{ to_status: string; actor: string; note: string }>(
        'SELECT to_status, actor, note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
        [id],
      )
    ).rows;

  it('users list shows everyone with their role; the tokens are stored only as salted scrypt hashes', async () => {
    const list = await cli('users', 'list');
    expect(list.code).to.equal(0);
    expect(
      list.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('\t').slice(0, 2)),
    ).to.deep.equal([
      ['otto.resolver', 'resolver'],
      ['rita.resolver', 'resolver'],
      ['vera.viewer', 'viewer'],
    ]);
    const stored = await sql.query(
      'SELECT row_to_json(u)::text AS row, token_salt, token_hash FROM review_users u',
    );
    for (const row of stored.rows) {
      for (const token of Object.values(tokens)) expect(row.row).not.to.contain(token.split('.')[1]);
      expect(row.token_hash).to.have.length(32);
      expect(row.token_salt).to.have.length(16);
    }
    expect(new Set(stored.rows.map((r) => r.token_salt.toString('hex'))).size).to.equal(3);
    const taken = await cli('users', 'add', 'vera.viewer', '--role', 'admin');
    expect(taken.code).to.equal(1);
    expect(taken.stderr).to.contain('vera.viewer already exists');
  });

  it('a viewer reads and exports but cannot change anything: no buttons, and POSTs refused', async () => {
    const { context, page } = await signedIn('vera.viewer');
    try {
      expect(await page.locator('tbody tr').count()).to.be.greaterThan(0);
      expect(await page.locator('button[name="action"]').count()).to.equal(0);
      expect(await page.locator('form[action="/bulk"]').count()).to.equal(0);
      const id = seeded.ids.orphan;
      await page.goto(`${base}/discrepancies/${id}`);
      expect(await page.locator('button[name="action"]').count()).to.equal(0);
      expect(await page.locator('textarea[name="note"]').count()).to.equal(0);
      const csv = await context.request.get(`${base}/export.csv`);
      expect(csv.status()).to.equal(200);
      // The page's own CSRF token (the sign-out form carries it) and the same origin: still refused.
      const csrf = await page.getAttribute('input[name="_csrf"]', 'value');
      const before = await historyOf(id);
      for (const [url, form] of [
        [`/discrepancies/${id}/review`, { _csrf: csrf!, action: 'resolve', note: 'I should not be able to' }],
        ['/bulk', { _csrf: csrf!, action: 'acknowledge', note: 'nor this', ids: id }],
      ] as const) {
        const refused = await context.request.post(`${base}${url}`, {
          form,
          headers: { origin: base },
          maxRedirects: 0,
        });
        expect(refused.status(), url).to.equal(403);
        expect(await refused.text()).to.contain('can read and export, not change anything');
      }
      const api = await context.request.post(`${base}/api/discrepancies/${id}/resolve`, {
        data: { note: 'nor this' },
        headers: { authorization: `Bearer ${tokens['vera.viewer']}` },
      });
      expect(api.status()).to.equal(403);
      expect(await historyOf(id)).to.deep.equal(before);
    } finally {
      await context.close();
    }
  });

  it("a resolver's decision is recorded under their own name, on the page and through the API", async () => {
    const { context, page } = await signedIn('rita.resolver');
    try {
      const id = seeded.ids.orphan;
      await page.goto(`${base}/discrepancies/${id}`);
      await page.fill('textarea[name="note"]', 'Checked with the partner: a test charge.');
      await page.click('button[name="action"][value="acknowledge"]');
      await page.waitForSelector('.flash.ok');
      expect(await page.textContent('.flash.ok')).to.equal('Acknowledged by rita.resolver.');
      expect(await page.locator('ol.timeline > li').last().locator('.actor').textContent()).to.equal(
        'rita.resolver',
      );
      const api = await context.request.post(`${base}/api/discrepancies/${id}/dismiss`, {
        // A "by" sent with a personal token is ignored: the token says who it is.
        data: { note: 'Test charge, refunded.', by: 'someone-else' },
        headers: { authorization: `Bearer ${tokens['otto.resolver']}` },
      });
      expect(api.status()).to.equal(200);
      expect((await historyOf(id)).slice(-2)).to.deep.equal([
        {
          to_status: 'acknowledged',
          actor: 'rita.resolver',
          note: 'Checked with the partner: a test charge.',
        },
        { to_status: 'dismissed', actor: 'otto.resolver', note: 'Test charge, refunded.' },
      ]);
    } finally {
      await context.close();
    }
  });

  it('a revoked token stops working at once: the open session and the bearer token alike', async () => {
    const { context, page } = await signedIn('otto.resolver');
    try {
      await page.goto(`${base}/discrepancies/${seeded.ids.duplicate}`);
      expect(await page.locator('button[name="action"]').count()).to.be.greaterThan(0);
      const revoked = await cli('users', 'revoke', 'otto.resolver');
      expect(revoked.code).to.equal(0);
      expect(revoked.stdout).to.equal('revoked otto.resolver: their token and sessions stop now\n');
      await page.reload();
      expect(new URL(page.url()).pathname).to.equal('/login');
      const bearer = await context.request.get(`${base}/api/discrepancies`, {
        headers: { authorization: `Bearer ${tokens['otto.resolver']}` },
      });
      expect(bearer.status()).to.equal(401);
      await page.fill('input[name="token"]', tokens['otto.resolver']);
      await page.click('button[type="submit"]');
      await page.waitForSelector('.flash.error');
      expect(new URL(page.url()).pathname).to.equal('/login');
      const list = await cli('users', 'list');
      expect(list.stdout).to.match(/^otto\.resolver\tresolver\tadded \S+\trevoked \S+$/m);
    } finally {
      await context.close();
    }
  });
});
