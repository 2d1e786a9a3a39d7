import { existsSync } from 'node:fs';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { addReviewUser } from '../../src/review/reviewUsers.js';
import { raise } from '../discrepancies/seed.js';
import { CHROMIUM, launchChromium } from '../support/chromium.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type SeededReview, seedReview } from './seedReview.js';

const TOKEN = 'four-eyes-review-token-0123456789';

describe('four eyes in a real headless Chromium: a big discrepancy waits for a second resolver', function () {
  this.timeout(90_000);
  const db = useFreshDatabase('review-four-eyes');
  let sql: Pool;
  let app: FastifyInstance | undefined;
  let browser: Browser | undefined;
  let base: string;
  let seeded: SeededReview;
  const tokens: Record<string, string> = {};
  const contexts: BrowserContext[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`    SKIPPED: ${CHROMIUM} does not exist (apt-get install -y chromium)`);
      this.skip();
    }
    sql = sqlPool(db.url);
    seeded = await seedReview(db.url, sql);
    tokens.rita = await addReviewUser(sql, 'rita.resolver', 'resolver');
    tokens.otto = await addReviewUser(sql, 'otto.resolver', 'resolver');
    app = createReviewServer({ pool: sql, token: TOKEN, approvalThreshold: '1000.00' });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchChromium();
  });
  after(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await app?.close();
    await sql?.end();
  });

  async function signedIn(who: 'rita' | 'otto'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser!.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.fill('input[name="token"]', tokens[who]);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/`);
    return { context, page };
  }

  const row = async (id: string) => {
    const status = (await sql.query('SELECT status FROM discrepancies WHERE id = $1', [id])).rows[0].status;
    const history = (
      await sql.query<{ from_status: string; to_status: string; actor: string; note: string }>(
        'SELECT from_status, to_status, actor, note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
        [id],
      )
    ).rows;
    return { status, history };
  };

  it('the first resolver only proposes; they cannot approve their own; a second resolver approves; both are in the history', async () => {
    const id = seeded.ids.unresolved; // 18,400.00 USD, above the threshold
    const rita = await signedIn('rita');
    await rita.page.goto(`${base}/discrepancies/${id}`);
    await rita.page.fill('textarea[name="note"]', 'Globex confirmed the payout never left.');
    await rita.page.click('button[name="action"][value="resolve"]');
    await rita.page.waitForSelector('.flash.ok');
    expect(await rita.page.textContent('.flash.ok')).to.contain('a second resolver must approve it');
    expect((await row(id)).status).to.equal('open');
    expect(await rita.page.textContent('.proposal .proposer')).to.equal('rita.resolver');
    expect(await rita.page.locator('button[name="decision"]').count()).to.equal(0);
    expect(await rita.page.locator('button[name="action"]').count()).to.equal(0);
    expect(await rita.page.textContent('.proposal .own')).to.contain('You proposed this');

    // Even by hand, with her own page's CSRF token, she cannot approve her own proposal.
    const csrf = await rita.page.getAttribute('input[name="_csrf"]', 'value');
    const own = await rita.context.request.post(`${base}/discrepancies/${id}/approval`, {
      form: { _csrf: csrf!, decision: 'approve', note: 'approving myself' },
      headers: { origin: base },
      maxRedirects: 0,
    });
    expect(own.status()).to.equal(409);
    expect(await own.text()).to.contain('a second resolver must approve it');
    expect((await row(id)).status).to.equal('open');
    // Nor through the API with her token: resolving again while it waits is refused.
    const again = await rita.context.request.post(`${base}/api/discrepancies/${id}/resolve`, {
      data: { note: 'again' },
      headers: { authorization: `Bearer ${tokens.rita}` },
    });
    expect(again.status()).to.equal(409);

    const otto = await signedIn('otto');
    await otto.page.goto(`${base}/discrepancies/${id}`);
    expect(await otto.page.textContent('.proposal .proposal-note')).to.equal(
      'Globex confirmed the payout never left.',
    );
    await otto.page.fill('.proposal textarea[name="note"]', 'Checked the Globex statement myself.');
    await otto.page.click('button[name="decision"][value="approve"]');
    await otto.page.waitForSelector('.flash.ok');
    expect(await otto.page.textContent('.flash.ok')).to.equal('Resolved: approved by otto.resolver.');
    const after = await row(id);
    expect(after.status).to.equal('resolved');
    expect(after.history.slice(-2)).to.deep.equal([
      {
        from_status: 'open',
        to_status: 'open',
        actor: 'rita.resolver',
        note: 'proposes to resolve (needs a second resolver): Globex confirmed the payout never left.',
      },
      {
        from_status: 'open',
        to_status: 'resolved',
        actor: 'otto.resolver',
        note: "approves rita.resolver's proposal to resolve: Checked the Globex statement myself.",
      },
    ]);
    const entries = otto.page.locator('ol.timeline > li');
    expect(await entries.last().locator('.actor').textContent()).to.equal('otto.resolver');
    expect(
      await entries
        .nth((await entries.count()) - 2)
        .locator('.actor')
        .textContent(),
    ).to.equal('rita.resolver');
  });

  it('a dismissal proposal can be rejected by a second resolver; the bulk form refuses big ones; small ones need one resolver', async () => {
    const big = seeded.ids.duplicate; // 1,249.90 BRL
    const small = seeded.ids.orphan; // 87.35 BRL
    const rita = await signedIn('rita');
    await rita.page.goto(`${base}/discrepancies/${big}`);
    await rita.page.fill('textarea[name="note"]', 'Looks like a test charge.');
    await rita.page.click('button[name="action"][value="dismiss"]');
    await rita.page.waitForSelector('.flash.ok');
    const otto = await signedIn('otto');
    await otto.page.goto(`${base}/discrepancies/${big}`);
    await otto.page.fill('.proposal textarea[name="note"]', 'It is a real double charge: refund it.');
    await otto.page.click('button[name="decision"][value="reject"]');
    await otto.page.waitForSelector('.flash.ok');
    expect(await otto.page.textContent('.flash.ok')).to.equal(
      'Proposal to dismiss rejected by otto.resolver.',
    );
    const rejected = await row(big);
    expect(rejected.status).to.equal('open');
    expect(rejected.history.at(-1)).to.deep.equal({
      from_status: 'open',
      to_status: 'open',
      actor: 'otto.resolver',
      note: "rejects rita.resolver's proposal to dismiss: It is a real double charge: refund it.",
    });

    await otto.page.goto(`${base}/`);
    await otto.page.check(`input[name="ids"][value="${big}"]`);
    await otto.page.check(`input[name="ids"][value="${small}"]`);
    await otto.page.fill('.bulk input[name="note"]', 'bulk');
    await otto.page.click('.bulk button[value="resolve"]');
    await otto.page.waitForSelector('.flash.error');
    expect(await otto.page.textContent('.flash.error')).to.contain(`#${big} is above the approval threshold`);
    expect((await row(small)).status).to.equal('open');

    await otto.page.goto(`${base}/discrepancies/${small}`);
    await otto.page.fill('textarea[name="note"]', 'Test transfer, refunded.');
    await otto.page.click('button[name="action"][value="resolve"]');
    await otto.page.waitForSelector('.flash.ok');
    expect(await otto.page.textContent('.flash.ok')).to.equal('Resolved by otto.resolver.');
    expect((await row(small)).status).to.equal('resolved');
  });
  it('a proposal is about the amount the page showed: grown since the page was drawn, it is refused, and proposed again', async () => {
    const id = await raise(sql, { partner: 'grow-pay', amountAtRisk: '1500.00', currency: 'USD' });
    const rita = await signedIn('rita');
    await rita.page.goto(`${base}/discrepancies/${id}`);
    // The reconciler finds another execution while the page is open: 3,000.00 at risk now.
    await sql.query('UPDATE discrepancies SET amount_at_risk = 3000.00 WHERE id = $1', [id]);
    await rita.page.fill('textarea[name="note"]', 'One refund covers it.');
    const [answer] = await Promise.all([
      rita.page.waitForResponse((response) => response.url().endsWith(`/discrepancies/${id}/review`)),
      rita.page.click('button[name="action"][value="dismiss"]'),
    ]);
    expect(answer.status()).to.equal(409);
    expect(await rita.page.textContent('body')).to.contain(
      'now has 3000.00 USD at risk, not the 1500.00 USD you were shown: look at it again',
    );
    expect(
      await sql.query('SELECT 1 FROM discrepancy_proposals WHERE discrepancy_id = $1', [id]),
    ).to.have.property('rowCount', 0);
    // Drawn again, the page shows 3,000.00, and that is what the proposal is about.
    await rita.page.goto(`${base}/discrepancies/${id}`);
    await rita.page.fill('textarea[name="note"]', 'Two refunds cover it.');
    await rita.page.click('button[name="action"][value="dismiss"]');
    await rita.page.waitForSelector('.flash.ok');
    const proposal = await sql.query(
      'SELECT amount_at_risk::text AS a FROM discrepancy_proposals WHERE discrepancy_id = $1',
      [id],
    );
    expect(proposal.rows).to.deep.equal([{ a: '3000.00' }]);
  });
});
