import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import {
  currentApprovalThresholds,
  setApprovalThreshold,
} from '../../src/discrepancies/approvalThresholds.js';
import { DiscrepancyTransitionError } from '../../src/discrepancies/errors/DiscrepancyTransitionError.js';
import { decideProposal, propose } from '../../src/discrepancies/fourEyes.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { addReviewUser } from '../../src/review/reviewUsers.js';
import { type CliRun, runCli } from '../support/cliProcess.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise } from './seed.js';

/**
 * Four eyes is the ledger's, not one program's: with a threshold set, no path resolves or dismisses a big
 * discrepancy alone (the library, the CLI, the review site's API, a program's own SQL), and a second
 * resolver's approval does.
 */
describe('four eyes everywhere: the approval threshold is kept in the ledger and obeyed by every path', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('approval_thresholds');
  let sql: Pool;

  function cli(...args: string[]): Promise<CliRun> {
    return runCli(args, { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
  }
  const status = async (id: string) =>
    (await sql.query<{ status: string }>('SELECT status FROM discrepancies WHERE id = $1', [id])).rows[0]
      .status;
  const historyOf = async (id: string) =>
    (
      await sql.query<{ from_status: string; to_status: string; actor: string; note: string }>(
        'SELECT from_status, to_status, actor, note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
        [id],
      )
    ).rows;

  before(async () => {
    sql = sqlPool(db.url);
  });
  after(async () => {
    await sql.end();
  });

  it('is off until a threshold is set: one resolver resolves any amount', async () => {
    expect(await currentApprovalThresholds(sql)).to.deep.equal([]);
    const id = await raise(sql, { amountAtRisk: '999999999.00', currency: 'USD' });
    await reviewDiscrepancies(sql, [id], 'resolve', { note: 'checked', by: 'ana' });
    expect(await status(id)).to.equal('resolved');
  });

  describe('with 1000.00 for every currency and 150000 for JPY', () => {
    before(async () => {
      await setApprovalThreshold(sql, { threshold: '1000.00', by: 'ops', note: 'policy FP-7' });
      await setApprovalThreshold(sql, { currency: 'jpy', threshold: '150000', by: 'ops', note: 'FP-7 yen' });
    });

    it('lists the thresholds in force with who set them and why', async () => {
      const current = await currentApprovalThresholds(sql);
      expect(
        current.map(({ currency, threshold, setBy, note }) => ({ currency, threshold, setBy, note })),
      ).to.deep.equal([
        { currency: '*', threshold: '1000.00', setBy: 'ops', note: 'policy FP-7' },
        { currency: 'JPY', threshold: '150000', setBy: 'ops', note: 'FP-7 yen' },
      ]);
    });

    it('reviewDiscrepancies refuses a batch holding one big discrepancy, all or nothing, naming it and the threshold', async () => {
      const small = await raise(sql, { amountAtRisk: '1000.00', currency: 'USD' });
      const big = await raise(sql, { amountAtRisk: '-1000.01', currency: 'USD' });
      let thrown: unknown;
      try {
        await reviewDiscrepancies(sql, [small, big], 'resolve', { note: 'looks fine', by: 'ana' });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).to.be.instanceOf(DiscrepancyTransitionError);
      expect((thrown as DiscrepancyTransitionError).refused).to.deep.equal([
        { id: big, status: 'open', reason: 'DISCREPANCY_APPROVAL_REQUIRED', threshold: '1000.00' },
      ]);
      expect((thrown as Error).message).to.contain(`${big} needs a second resolver's approval`);
      expect(await status(small)).to.equal('open');
      expect(await status(big)).to.equal('open');
      // Acknowledging decides nothing about money: one person may.
      await reviewDiscrepancies(sql, [big], 'acknowledge', { note: 'looking', by: 'ana' });
      expect(await status(big)).to.equal('acknowledged');
      try {
        await reviewDiscrepancies(sql, [big], 'dismiss', { note: 'noise', by: 'ana' });
        expect.fail('dismissing a big discrepancy alone was allowed');
      } catch (error) {
        expect((error as DiscrepancyTransitionError).refused?.[0]?.reason).to.equal(
          'DISCREPANCY_APPROVAL_REQUIRED',
        );
      }
      expect(await status(big)).to.equal('acknowledged');
    });

    it("a currency's own threshold replaces the default for it, and clearing it falls back to the default", async () => {
      const yen = await raise(sql, { amountAtRisk: '150000', currency: 'JPY' });
      await reviewDiscrepancies(sql, [yen], 'resolve', { note: 'under the yen threshold', by: 'ana' });
      expect(await status(yen)).to.equal('resolved');
      const moreYen = await raise(sql, { amountAtRisk: '150001', currency: 'JPY' });
      await expectRefused(() => reviewDiscrepancies(sql, [moreYen], 'resolve', { note: 'x', by: 'ana' }));
      await setApprovalThreshold(sql, {
        currency: 'JPY',
        threshold: null,
        by: 'ops',
        note: 'back to the default',
      });
      const fewYen = await raise(sql, { amountAtRisk: '1500', currency: 'JPY' });
      await expectRefused(() => reviewDiscrepancies(sql, [fewYen], 'resolve', { note: 'x', by: 'ana' }));
      const kept = await sql.query('SELECT currency, threshold FROM approval_thresholds ORDER BY id');
      expect(kept.rows.map((r) => [r.currency, r.threshold])).to.deep.equal([
        ['*', '1000.00'],
        ['JPY', '150000'],
        ['JPY', null],
      ]);
      await setApprovalThreshold(sql, {
        currency: 'JPY',
        threshold: '150000',
        by: 'ops',
        note: 'FP-7 yen again',
      });
    });

    it("the database refuses a program's own UPDATE that skips the approval", async () => {
      const big = await raise(sql, { amountAtRisk: '5000.00', currency: 'EUR' });
      let thrown: unknown;
      try {
        await sql.query(`UPDATE discrepancies SET status = 'resolved' WHERE id = $1`, [big]);
      } catch (error) {
        thrown = error;
      }
      expect((thrown as { code?: string })?.code).to.equal('IL001');
      expect(String((thrown as Error).message)).to.contain("needs a second resolver's approval");
      expect(await status(big)).to.equal('open');
    });

    it("the database refuses a program's own UPDATE that lowers the bar in the same or an earlier statement (amount, currency)", async () => {
      const tricks = [
        // The same statement resolves it and moves it under JPY's 150000 (7000 reads as yen).
        [`UPDATE discrepancies SET status = 'resolved', currency = 'JPY' WHERE id = $1`],
        [`UPDATE discrepancies SET status = 'dismissed', amount_at_risk = 0 WHERE id = $1`],
        [`UPDATE discrepancies SET status = 'resolved', amount_at_risk = NULL WHERE id = $1`],
        // Or first makes it small, then resolves it.
        [
          'UPDATE discrepancies SET amount_at_risk = 1 WHERE id = $1',
          `UPDATE discrepancies SET status = 'resolved' WHERE id = $1`,
        ],
        [
          `UPDATE discrepancies SET currency = 'JPY' WHERE id = $1`,
          `UPDATE discrepancies SET status = 'dismissed' WHERE id = $1`,
        ],
      ];
      for (const statements of tricks) {
        const big = await raise(sql, { amountAtRisk: '7000.00', currency: 'USD' });
        const client = await sql.connect();
        let thrown: unknown;
        try {
          await client.query('BEGIN');
          for (const statement of statements) await client.query(statement, [big]);
          await client.query('COMMIT');
        } catch (error) {
          thrown = error;
          await client.query('ROLLBACK');
        } finally {
          client.release();
        }
        expect(await status(big), statements.join('; ')).to.equal('open');
        expect((thrown as { code?: string })?.code, statements.join('; ')).to.equal('IL001');
      }
    });

    it('a big discrepancy two people dismissed cannot be zeroed, reopened and resolved by one', async () => {
      const big = await raise(sql, { amountAtRisk: '7000.00', currency: 'USD' });
      await propose(sql, big, 'dismiss', { note: 'duplicate of 41', by: 'ana' });
      await decideProposal(sql, big, 'approve', { note: 'agreed', by: 'bea' });
      expect(await status(big)).to.equal('dismissed');
      for (const statement of [
        `UPDATE discrepancies SET status = 'open', amount_at_risk = 0 WHERE id = $1`,
        'UPDATE discrepancies SET amount_at_risk = 0 WHERE id = $1',
        `UPDATE discrepancies SET currency = 'JPY' WHERE id = $1`,
      ]) {
        await expectRefused(() => sql.query(statement, [big]));
        expect(await status(big), statement).to.equal('dismissed');
      }
    });

    it("a second resolver's approval applies it, and the history has both people and both notes", async () => {
      const big = await raise(sql, { amountAtRisk: '5000.00', currency: 'BRL' });
      await propose(sql, big, 'resolve', { note: 'refunded by hand, ticket 88', by: 'ana' });
      expect(await status(big)).to.equal('open');
      await decideProposal(sql, big, 'approve', { note: 'saw the refund', by: 'bea' });
      expect(await status(big)).to.equal('resolved');
      const history = await historyOf(big);
      expect(history.slice(1).map((h) => [h.from_status, h.to_status, h.actor])).to.deep.equal([
        ['open', 'open', 'ana'],
        ['open', 'resolved', 'bea'],
      ]);
      expect(history[1].note).to.contain('refunded by hand, ticket 88');
      expect(history[2].note).to.contain("approves ana's proposal to resolve: saw the refund");
      // The approval marker is transaction-local: the next plain UPDATE of another big one is refused again.
      const next = await raise(sql, { amountAtRisk: '5000.00', currency: 'BRL' });
      await expectRefused(() =>
        sql.query(`UPDATE discrepancies SET status = 'dismissed' WHERE id = $1`, [next]),
      );
    });

    it('the CLI refuses to resolve or dismiss a big one (exit 1, nothing changed) and resolves a small one', async () => {
      const big = await raise(sql, { amountAtRisk: '2500.00', currency: 'USD' });
      const small = await raise(sql, { amountAtRisk: '25.00', currency: 'USD' });
      const refused = await cli('resolve', big, small, '--note', 'ok', '--by', 'cron');
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.contain('nothing was changed');
      expect(refused.stderr).to.contain(
        `${big}: its amount at risk is above the approval threshold (1000.00)`,
      );
      expect(await status(big)).to.equal('open');
      expect(await status(small)).to.equal('open');
      const dismissed = await cli('dismiss', big, '--note', 'noise', '--by', 'cron');
      expect(dismissed.code).to.equal(1);
      expect(await status(big)).to.equal('open');
      const ok = await cli('resolve', small, '--note', 'ok', '--by', 'cron');
      expect(ok.code, ok.stderr).to.equal(0);
      expect(await status(small)).to.equal('resolved');
    });

    it('the CLI lists, sets and clears thresholds, recorded as the script with its OS user', async () => {
      const set = await cli(
        'approval-threshold',
        'set',
        '250.50',
        '--currency',
        'GBP',
        '--note',
        'FP-8',
        '--by',
        'ops',
      );
      expect(set.code, set.stderr).to.equal(0);
      expect(set.stdout).to.contain('approval threshold for GBP: 250.50');
      const list = await cli('approval-threshold');
      expect(list.code, list.stderr).to.equal(0);
      const lines = list.stdout.trim().split('\n');
      expect(lines[0]).to.match(/^\* \(any other currency\)\t1000\.00\tset by ops at /);
      expect(lines.find((l) => l.startsWith('GBP\t'))).to.match(
        /^GBP\t250\.50\tset by script:ops \(os user [^)]+\) at .*: FP-8$/,
      );
      const gbp = await raise(sql, { amountAtRisk: '300.00', currency: 'GBP' });
      await expectRefused(() => reviewDiscrepancies(sql, [gbp], 'resolve', { note: 'x', by: 'ana' }));
      const cleared = await cli(
        'approval-threshold',
        'clear',
        '--currency',
        'GBP',
        '--note',
        'FP-8 withdrawn',
        '--by',
        'ops',
      );
      expect(cleared.code, cleared.stderr).to.equal(0);
      await reviewDiscrepancies(sql, [gbp], 'resolve', { note: 'under the default', by: 'ana' });
      expect(await status(gbp)).to.equal('resolved');
      for (const bad of [
        ['approval-threshold', 'set', '-5', '--note', 'n', '--by', 'b'],
        ['approval-threshold', 'set', '1,000', '--note', 'n', '--by', 'b'],
        ['approval-threshold', 'set', '10', '--by', 'b'],
        ['approval-threshold', 'set', '10', '--currency', 'EURO', '--note', 'n', '--by', 'b'],
        ['approval-threshold', 'drop'],
      ]) {
        const run = await cli(...bad);
        expect(run.code, `${bad.join(' ')}: ${run.stderr}`).to.equal(2);
      }
    });

    it("the review site's API, started without its own threshold, makes a big resolve a proposal (202)", async () => {
      const big = await raise(sql, { amountAtRisk: '7000.00', currency: 'USD' });
      const token = await addReviewUser(sql, 'rui.resolver', 'resolver');
      const app: FastifyInstance = createReviewServer({ pool: sql, token: 'site-token-0123456789abcdef' });
      try {
        await app.ready();
        const answer = await app.inject({
          method: 'POST',
          url: `/api/discrepancies/${big}/resolve`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          payload: { note: 'paid back' },
        });
        expect(answer.statusCode, answer.body).to.equal(202);
        expect(answer.json().awaitingApproval).to.include({ action: 'resolve', proposedBy: 'rui.resolver' });
        expect(await status(big)).to.equal('open');
      } finally {
        await app.close();
      }
    });

    it("the shared REVIEW_TOKEN is nobody's pair of eyes: its holder alone never resolves a big one, proposing as a script and approving as the bootstrap admin", async () => {
      const shared = 'site-token-0123456789abcdef';
      const origin = 'http://localhost:80';
      const byScript = await raise(sql, { amountAtRisk: '8000.00', currency: 'USD' });
      const byPerson = await raise(sql, { amountAtRisk: '9000.00', currency: 'USD' });
      const ivo = await addReviewUser(sql, 'ivo.resolver', 'resolver');
      const app: FastifyInstance = createReviewServer({ pool: sql, token: shared });
      try {
        await app.ready();
        const json = { 'content-type': 'application/json' };
        // One holder of the shared token proposes as a "script"; a person (who may hold it too) proposes as themselves.
        const scripted = await app.inject({
          method: 'POST',
          url: `/api/discrepancies/${byScript}/resolve`,
          headers: { authorization: `Bearer ${shared}`, ...json },
          payload: { by: 'nightly-job', note: 'paid back' },
        });
        expect(scripted.statusCode, scripted.body).to.equal(403);
        expect(scripted.body).to.contain('PERSON_REQUIRED');
        const proposed = await app.inject({
          method: 'POST',
          url: `/api/discrepancies/${byPerson}/resolve`,
          headers: { authorization: `Bearer ${ivo}`, ...json },
          payload: { note: 'paid back' },
        });
        expect(proposed.statusCode, proposed.body).to.equal(202);
        // The same secret then signs in on the site, as "review-token admin", and approves both.
        const login = await app.inject({
          method: 'POST',
          url: '/login',
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
          payload: new URLSearchParams({ token: shared, next: '/' }).toString(),
        });
        const setCookie = login.headers['set-cookie'];
        expect(setCookie, 'the shared token signs in').to.not.equal(undefined);
        const cookie = String(Array.isArray(setCookie) ? setCookie[0] : setCookie).split(';')[0];
        for (const id of [byScript, byPerson]) {
          const page = await app.inject({ method: 'GET', url: `/discrepancies/${id}`, headers: { cookie } });
          expect(page.statusCode).to.equal(200);
          // The page offers the shared token no approval form, and says why where a proposal waits.
          expect(page.body).not.to.contain(`action="/discrepancies/${id}/approval"`);
          if (id === byPerson) expect(page.body).to.contain('Signed in with the shared review token');
          const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
          expect(csrf, 'the page carries a CSRF token').to.not.equal('');
          const approval = await app.inject({
            method: 'POST',
            url: `/discrepancies/${id}/approval`,
            headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams({ _csrf: csrf, decision: 'approve', note: 'ok' }).toString(),
          });
          expect(approval.statusCode, `approval of ${id}`).to.equal(403);
        }
        expect(await status(byScript), 'proposed and approved with one shared secret').to.equal('open');
        expect(await status(byPerson), "a person's proposal approved by the shared secret").to.equal('open');
        // Below the threshold, and for acknowledging, the token still does what it did.
        const small = await raise(sql, { amountAtRisk: '10.00', currency: 'USD' });
        const resolvedSmall = await app.inject({
          method: 'POST',
          url: `/api/discrepancies/${small}/resolve`,
          headers: { authorization: `Bearer ${shared}`, ...json },
          payload: { by: 'nightly-job', note: 'paid back' },
        });
        expect(resolvedSmall.statusCode, resolvedSmall.body).to.equal(200);
        expect(await status(small)).to.equal('resolved');
        const acknowledged = await app.inject({
          method: 'POST',
          url: `/api/discrepancies/${byScript}/acknowledge`,
          headers: { authorization: `Bearer ${shared}`, ...json },
          payload: { by: 'nightly-job', note: 'looking' },
        });
        expect(acknowledged.statusCode, acknowledged.body).to.equal(200);
        expect(await status(byScript)).to.equal('acknowledged');
      } finally {
        await app.close();
      }
    });
  });

  async function expectRefused(work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      const reason = (error as DiscrepancyTransitionError).refused?.[0]?.reason;
      const code = (error as { code?: string }).code;
      if (reason === 'DISCREPANCY_APPROVAL_REQUIRED' || code === 'IL001') return;
      throw error;
    }
    expect.fail('a big discrepancy was resolved or dismissed without a second resolver');
  }
});
