import { expect } from 'chai';
import { setApprovalThreshold } from '../../src/discrepancies/approvalThresholds.js';
import { ApprovalError } from '../../src/discrepancies/errors/ApprovalError.js';
import { DiscrepancyTransitionError } from '../../src/discrepancies/errors/DiscrepancyTransitionError.js';
import { decideProposal, pendingProposal, propose } from '../../src/discrepancies/fourEyes.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { addReviewUser } from '../../src/review/reviewUsers.js';
import {
  type CsvRow,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from '../reconcile/support.js';
import { rejectionOf } from '../support/fixtures.js';
import { raise } from './seed.js';

/**
 * Four eyes approves what the proposer saw. A duplicate that is still open keeps up with the partner (a
 * further execution raises its amount at risk, raiseFlags.ts), so a proposal made before that is about a
 * smaller problem than the one a second resolver would apply it to.
 */
describe('four eyes: a proposal does not outlive the amount it was made on, nor its discrepancy', function () {
  this.timeout(60_000);
  const fx = useReconcileFixture('stale_proposal');
  let base: Date;
  const at = (m: number) => minutes(base, m);

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
    await setApprovalThreshold(fx.sql, { threshold: '100.00', by: 'finance', note: 'policy FP-7' });
  });

  async function run(config: ReconcilerConfig): Promise<ReconciliationResult> {
    const [report] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    return report;
  }

  it('a third execution after the proposal to dismiss: the approval is refused, nothing is dismissed', async () => {
    const partner = partnerName('stale');
    const intent = await unknownIntent(fx.ledger, spec(partner, 'order-7', { amount: '150.00' }));
    await place(fx.sql, intent, { startedAt: at(60) });
    const rows = (n: number): CsvRow[] =>
      Array.from({ length: n }, (_, k) => ({
        reference: 'order-7',
        nsu: `E-${k + 1}`,
        amount: '150.00',
        executedAt: at(61 + k),
      }));
    const report = (name: string, n: number) =>
      csvReconciler(partner, writeCsv(fx.dir, `${partner}-${name}.csv`, rows(n)), {
        coverage: { from: at(0), to: at(480) },
      });

    await run(report('two', 2));
    const [duplicate] = await discrepanciesOf(fx.sql, partner);
    expect(duplicate).to.deep.include({ kind: 'duplicate_execution', amount_at_risk: '150.00' });
    const id = (
      await fx.sql.query<{ id: string }>(
        `SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'duplicate_execution'`,
        [partner],
      )
    ).rows[0].id;
    await propose(fx.sql, id, 'dismiss', {
      note: 'the partner refunds the second charge of 150.00 tomorrow',
      by: 'ana',
    });

    // Next morning's report: a third charge. The open duplicate now has 300.00 at risk.
    await run(report('three', 3));
    const [grown] = await discrepanciesOf(fx.sql, partner);
    expect(grown).to.deep.include({ amount_at_risk: '300.00', status: 'open' });

    // The run that grew it withdrew Ana's proposal, and says so where the reviewers look.
    expect(await pendingProposal(fx.sql, id)).to.equal(null);
    const notes = await historyNotes(id);
    expect(notes.at(-1)).to.equal(
      "ana's proposal to dismiss, made on 150.00 BRL at risk, is withdrawn: the amount at risk is now 300.00 BRL; propose again",
    );
    expect(notes.at(-2)).to.match(/^The partner reports a further execution\. /);

    // Bea approves "Ana's proposal": nobody ever looked at the third charge.
    const refused = await rejectionOf(
      decideProposal(fx.sql, id, 'approve', { note: 'ok, refund confirmed', by: 'bea' }),
    );
    expect(refused, 'a proposal made at 150.00 at risk applied to 300.00').to.be.instanceOf(ApprovalError);
    expect((refused as ApprovalError).code).to.equal('NO_PROPOSAL');
    const [after] = await discrepanciesOf(fx.sql, partner);
    expect(after.status).to.equal('open');
  });

  it('an amount changed by any other path: approving withdraws the proposal (committed) and throws PROPOSAL_STALE', async () => {
    const id = await raise(fx.sql, {
      partner: partnerName('stale-sql'),
      amountAtRisk: '150.00',
      currency: 'BRL',
    });
    await propose(fx.sql, id, 'resolve', { note: 'refunded, see ticket 12', by: 'ana' });
    // A program's own UPDATE may raise an amount at risk (the trigger of migration 0017 stops only the
    // changes that take a big one down or settle it alone).
    await fx.sql.query(`UPDATE discrepancies SET amount_at_risk = 450.00 WHERE id = $1`, [id]);

    const refused = await rejectionOf(decideProposal(fx.sql, id, 'approve', { note: 'ok', by: 'bea' }));
    expect(refused).to.be.instanceOf(ApprovalError);
    expect((refused as ApprovalError).code).to.equal('PROPOSAL_STALE');
    expect((refused as Error).message)
      .to.include('150.00 BRL')
      .and.include('450.00 BRL');
    const { rows } = await fx.sql.query('SELECT status FROM discrepancies WHERE id = $1', [id]);
    expect(rows[0].status).to.equal('open');
    // Withdrawn for good (not rolled back with the refusal), and the history says who found it stale.
    expect(await pendingProposal(fx.sql, id)).to.equal(null);
    const history = await fx.sql.query<{
      actor: string;
      note: string;
      from_status: string;
      to_status: string;
    }>(
      'SELECT actor, note, from_status, to_status FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
      [id],
    );
    expect(history.rows.at(-1)).to.deep.equal({
      actor: 'bea',
      from_status: 'open',
      to_status: 'open',
      note:
        "cannot approve ana's proposal to resolve: it was made on 150.00 BRL at risk and the discrepancy now " +
        'has 450.00 BRL; the proposal is withdrawn, propose again',
    });

    // Proposed again on the amount it has now, a second person can approve it.
    await propose(fx.sql, id, 'resolve', { note: 'all three refunded, ticket 12', by: 'ana' });
    expect(await decideProposal(fx.sql, id, 'approve', { note: 'checked', by: 'bea' })).to.equal('resolve');
    const done = await fx.sql.query('SELECT status FROM discrepancies WHERE id = $1', [id]);
    expect(done.rows[0].status).to.equal('resolved');
  });

  it('the same amount written another way (150 for 150.00) is not a change: the approval applies', async () => {
    const id = await raise(fx.sql, {
      partner: partnerName('stale-same'),
      amountAtRisk: '150.00',
      currency: 'BRL',
    });
    await propose(fx.sql, id, 'dismiss', { note: 'duplicate of #9', by: 'ana' });
    await fx.sql.query(`UPDATE discrepancies SET amount_at_risk = 150 WHERE id = $1`, [id]);
    expect(await decideProposal(fx.sql, id, 'approve', { note: 'agreed', by: 'bea' })).to.equal('dismiss');
  });

  it('settled another way (its threshold raised meanwhile): the waiting proposal is withdrawn, with a history row', async () => {
    await setApprovalThreshold(fx.sql, {
      currency: 'CHF',
      threshold: '100.00',
      by: 'finance',
      note: 'FP-7 CHF',
    });
    const id = await raise(fx.sql, {
      partner: partnerName('stale-raised'),
      amountAtRisk: '150.00',
      currency: 'CHF',
    });
    await propose(fx.sql, id, 'dismiss', { note: 'known test charge', by: 'ana' });
    await setApprovalThreshold(fx.sql, {
      currency: 'CHF',
      threshold: '1000.00',
      by: 'finance',
      note: 'FP-8 CHF',
    });

    await reviewDiscrepancies(fx.sql, [id], 'resolve', { note: 'refund seen on the statement', by: 'carl' });
    expect(await pendingProposal(fx.sql, id)).to.equal(null);
    const history = await fx.sql.query<{
      actor: string;
      note: string;
      from_status: string;
      to_status: string;
    }>(
      'SELECT actor, note, from_status, to_status FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
      [id],
    );
    expect(history.rows.slice(-2)).to.deep.equal([
      { actor: 'carl', from_status: 'open', to_status: 'resolved', note: 'refund seen on the statement' },
      {
        actor: 'carl',
        from_status: 'resolved',
        to_status: 'resolved',
        note: "ana's proposal to dismiss is withdrawn: the discrepancy is resolved",
      },
    ]);
  });

  it("a caller's stricter threshold (a review site's) is judged under the row lock, like the ledger's", async () => {
    await setApprovalThreshold(fx.sql, {
      currency: 'USD',
      threshold: '10000.00',
      by: 'finance',
      note: 'FP-7 USD',
    });
    const id = await raise(fx.sql, {
      partner: partnerName('stale-site'),
      amountAtRisk: '150.00',
      currency: 'USD',
    });
    const refused = await rejectionOf(
      reviewDiscrepancies(fx.sql, [id], 'resolve', { note: 'ok', by: 'carl', approvalThreshold: '100.00' }),
    );
    expect(refused).to.be.instanceOf(DiscrepancyTransitionError);
    expect((refused as DiscrepancyTransitionError).refused).to.deep.equal([
      { id, status: 'open', reason: 'DISCREPANCY_APPROVAL_REQUIRED', threshold: '100.00' },
    ]);
    // Under the ledger's own threshold, without the stricter one, one person may resolve it.
    await reviewDiscrepancies(fx.sql, [id], 'resolve', { note: 'ok', by: 'carl' });
  });

  it('a proposal with the amount its proposer was shown is refused when the discrepancy has another now', async () => {
    const id = await raise(fx.sql, {
      partner: partnerName('stale-seen'),
      amountAtRisk: '150.00',
      currency: 'BRL',
    });
    await fx.sql.query('UPDATE discrepancies SET amount_at_risk = 300.00 WHERE id = $1', [id]);
    for (const seen of [
      { amountAtRisk: '150.00', currency: 'BRL' },
      { amountAtRisk: '300.00', currency: 'USD' },
      { amountAtRisk: null, currency: 'BRL' },
    ]) {
      const refused = await rejectionOf(propose(fx.sql, id, 'dismiss', { note: 'n', by: 'ana', seen }));
      expect((refused as ApprovalError).code, JSON.stringify(seen)).to.equal('PROPOSAL_STALE');
      expect(await pendingProposal(fx.sql, id)).to.equal(null);
    }
    // The same amount written another way is what was shown.
    await propose(fx.sql, id, 'dismiss', {
      note: 'n',
      by: 'ana',
      seen: { amountAtRisk: '300', currency: 'BRL' },
    });
    expect(await pendingProposal(fx.sql, id)).to.include({ action: 'dismiss', proposedBy: 'ana' });
  });

  it('over the API: amountAtRisk and currency as read are compared (409 PROPOSAL_STALE); malformed ones are a 400', async () => {
    const id = await raise(fx.sql, {
      partner: partnerName('stale-api'),
      amountAtRisk: '150.00',
      currency: 'BRL',
    });
    const token = await addReviewUser(fx.sql, `ana-${id}`, 'resolver');
    const app = createReviewServer({ pool: fx.sql, token: 'stale-api-review-token-0123456789' });
    try {
      const post = (body: object) =>
        app.inject({
          method: 'POST',
          url: `/api/discrepancies/${id}/dismiss`,
          headers: { authorization: `Bearer ${token}` },
          payload: body,
        });
      await fx.sql.query('UPDATE discrepancies SET amount_at_risk = 300.00 WHERE id = $1', [id]);
      const stale = await post({ note: 'refunded', amountAtRisk: '150.00', currency: 'BRL' });
      expect(stale.statusCode).to.equal(409);
      expect(stale.json().error.code).to.equal('PROPOSAL_STALE');
      for (const bad of [
        { amountAtRisk: 150, currency: 'BRL' },
        { amountAtRisk: '1e3', currency: 'BRL' },
        { amountAtRisk: '150.00' },
      ]) {
        const refused = await post({ note: 'refunded', ...bad });
        expect(refused.statusCode, JSON.stringify(bad)).to.equal(400);
      }
      const accepted = await post({ note: 'refunded', amountAtRisk: '300.00', currency: 'BRL' });
      expect(accepted.statusCode).to.equal(202);
    } finally {
      await app.close();
    }
  });

  async function historyNotes(id: string): Promise<string[]> {
    const { rows } = await fx.sql.query<{ note: string }>(
      'SELECT note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
      [id],
    );
    return rows.map((row) => row.note);
  }
});
