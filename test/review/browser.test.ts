import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Browser, Page } from 'playwright-core';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { addReviewUser } from '../../src/review/reviewUsers.js';
import { CHROMIUM, launchChromium } from '../support/chromium.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type SeededReview, seedReview } from './seedReview.js';

const TOKEN = 'browser-test-token-fedcba9876543210';
/** The screenshot the README shows; compiled tests live in <dist>/test/review, three levels below the repo. */
const SCREENSHOT = resolve(__dirname, '../../../docs/review-page.png');

describe('review page in a real headless Chromium: sign in, filter, resolve with a note', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('review-browser');
  let sql: Pool;
  let app: FastifyInstance | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let base: string;
  let seeded: SeededReview;
  let beatrizToken: string;
  const pageErrors: string[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(
        `    SKIPPED: ${CHROMIUM} does not exist. Install Debian's Chromium to run the browser test: ` +
          'apt-get update && apt-get install -y chromium',
      );
      this.skip();
    }
    sql = sqlPool(db.url);
    seeded = await seedReview(db.url, sql);
    beatrizToken = await addReviewUser(sql, 'beatriz.lima', 'resolver');
    app = createReviewServer({ pool: sql, token: TOKEN });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchChromium();
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      deviceScaleFactor: 1,
    });
    page = await context.newPage();
    // CSP violations and script errors show up here: the pages must produce none.
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(error.message));
  });

  after(async () => {
    await browser?.close();
    await app?.close();
    await sql?.end();
  });

  it('sends a visitor to the login form, and their personal token signs them in to the list', async () => {
    await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).to.equal('/login');
    await page.fill('input[name="token"]', 'wrong-token-wrong-token');
    await page.click('button[type="submit"]');
    await page.waitForSelector('.flash.error');
    expect(await page.textContent('.flash.error')).to.contain('That token is not right');

    await page.fill('input[name="token"]', beatrizToken);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/`);
    pageErrors.length = 0; // the refused sign-in above logs its 401: expected
    expect(await page.textContent('h1')).to.equal('Discrepancies');
    expect(await page.textContent('strong.who')).to.equal('beatriz.lima');
    const cookies = await page.context().cookies();
    expect(cookies).to.have.length(1);
    expect(cookies[0]).to.include({
      name: 'il_review_session',
      httpOnly: true,
      sameSite: 'Strict',
      secure: false,
    });
  });

  it('shows every discrepancy with amounts and statuses (and takes the README screenshot)', async () => {
    const rows = page.locator('tbody tr');
    expect(await rows.count()).to.equal(9);
    const duplicateRow = page.locator('tr', {
      has: page.locator(`a[href="/discrepancies/${seeded.ids.duplicate}"]`),
    });
    expect(await duplicateRow.locator('td.amount').textContent()).to.equal('1,249.90BRL');
    expect(await duplicateRow.locator('.badge').textContent()).to.equal('Open');
    const amountAlign = await duplicateRow
      .locator('td.amount')
      .evaluate(
        (cell) =>
          (globalThis as unknown as { getComputedStyle(e: unknown): { textAlign: string } }).getComputedStyle(
            cell,
          ).textAlign,
      );
    expect(amountAlign).to.equal('right');

    const target =
      process.env.UPDATE_SCREENSHOTS || !existsSync(SCREENSHOT)
        ? SCREENSHOT
        : join(tmpdir(), 'review-page.png');
    mkdirSync(dirname(target), { recursive: true });
    await page.screenshot({ path: target, fullPage: true });
    console.log(
      `    screenshot: ${target}${target === SCREENSHOT ? '' : ' (UPDATE_SCREENSHOTS=1 replaces docs/review-page.png)'}`,
    );
  });

  it('filters by partner and kind with the form', async () => {
    await page.selectOption('select[name="partner"]', 'globex-payouts');
    await page.click('form.filters button[type="submit"]');
    await page.waitForURL(/partner=globex-payouts/);
    const partners = await page.locator('tbody tr td:nth-child(4)').allTextContents();
    expect(partners).to.deep.equal(['globex-payouts', 'globex-payouts', 'globex-payouts']);

    await page.selectOption('select[name="kind"]', 'unresolved');
    await page.click('form.filters button[type="submit"]');
    await page.waitForURL(/kind=unresolved/);
    const links = await page.locator('tbody td.id a').allTextContents();
    expect(links).to.deep.equal([seeded.ids.unresolved]);
    expect(await page.inputValue('select[name="partner"]')).to.equal('globex-payouts');
  });

  it('opens one, resolves it with a note; the database and the page record the signed-in person', async () => {
    const id = seeded.ids.unresolved;
    await page.click(`tbody a[href="/discrepancies/${id}"]`);
    await page.waitForURL(`${base}/discrepancies/${id}`);
    expect(await page.textContent('h1')).to.equal(`Discrepancy #${id}`);
    expect(await page.textContent('.risk')).to.equal('18,400.00USD');
    // The intent with its attempt, and the run that raised it.
    expect(await page.locator('text=PAY-7790:payout').count()).to.equal(1);
    expect(await page.locator('h2', { hasText: 'Reconciliation run' }).count()).to.equal(1);

    const note = 'Globex confirmed by phone: payout never left; re-sent as PAY-7790-R.';
    await page.fill('textarea[name="note"]', note);
    // Nobody types a name: the decision is the signed-in person's.
    expect(await page.locator('input[name="by"]').count()).to.equal(0);
    await page.click('button[name="action"][value="resolve"]');
    await page.waitForSelector('.flash.ok');
    expect(await page.textContent('.flash.ok')).to.equal('Resolved by beatriz.lima.');
    expect(await page.locator('.head .badge').textContent()).to.equal('Resolved');

    const row = await sql.query<{ status: string }>('SELECT status FROM discrepancies WHERE id = $1', [id]);
    expect(row.rows[0].status).to.equal('resolved');
    const history = await sql.query<{ from_status: string; to_status: string; actor: string; note: string }>(
      'SELECT from_status, to_status, actor, note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
      [id],
    );
    expect(history.rows.at(-1)).to.deep.equal({
      from_status: 'open',
      to_status: 'resolved',
      actor: 'beatriz.lima',
      note,
    });

    const entries = page.locator('ol.timeline > li');
    expect(await entries.count()).to.equal(history.rows.length);
    expect(await entries.last().locator('.actor').textContent()).to.equal('beatriz.lima');
    expect(await entries.last().locator('.note').textContent()).to.equal(note);
    expect(await entries.last().locator('.badge').allTextContents()).to.deep.equal(['Open', 'Resolved']);

    // The next discrepancy's form says whose decision it will be.
    await page.goto(`${base}/discrepancies/${seeded.ids.duplicate}`);
    expect(await page.locator('input[name="by"]').count()).to.equal(0);
    expect(await page.textContent('.actions p.muted strong')).to.equal('beatriz.lima');
    expect(pageErrors).to.deep.equal([]);
  });
});
