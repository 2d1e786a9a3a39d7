import { expect } from 'chai';
import { PartnerNotExecuted } from '../../src/index.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  csvReconciler,
  dbNow,
  discrepanciesOf,
  intentRow,
  minutes,
  noDiscrepancies,
  notExecutedIntent,
  partnerName,
  place,
  provenAbsent,
  rejectedIntent,
  seenRow,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * What a report showing the execution of a `not_executed` intent does (src/reconcile/correctLateExecutions.ts):
 * corrected to `completed` with a `late_completion` while the settled attempt is still the current one and
 * the row could be its execution; otherwise what it did before (an orphan now, a duplicate once the next
 * attempt's execution is listed too). The reviewer's case (a report's proof, not re-claimed) is
 * executionOfNotExecuted.test.ts.
 */
describe('reconcile: a report shows the execution of a not_executed intent', () => {
  const fx = useReconcileFixture('rec_late_execution');
  let base: Date;
  let coverage: { from: Date; to: Date };

  beforeEach(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
    coverage = { from: base, to: minutes(base, 400) };
  });

  /** Report 2: the first one corrected, with `missed` executed a minute after attempt 1 started. */
  function correctedReport(partner: string): string {
    return writeCsv(fx.dir, `${partner}-2.csv`, [
      seenRow(base),
      { reference: 'missed', nsu: 'L-2', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
  }

  it('proven absent, then shown: completed with its partner reference, one late_completion saying both', async () => {
    const partner = partnerName('proof');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, correctedReport(partner), { coverage }),
    });
    expect(run.corrected).to.equal(1);
    expect(run.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), late_completion: 1 });
    expect(await intentRow(fx.sql, missed)).to.deep.include({
      status: 'completed',
      attempt: 1,
      partner_reference: 'L-2',
      resolved_by: `reconciler:run-${run.runId}`,
      resolution: 'completed',
    });
    const [late] = await discrepanciesOf(fx.sql, partner);
    expect(late).to.deep.include({
      kind: 'late_completion',
      intent_id: missed,
      attempt: 1,
      run_id: run.runId,
      amount_at_risk: '10.00',
      dedupe_key: `late_completion:${missed}:1`,
    });
    expect(late.summary).to.contain('as not executed on attempt 1, proven absent from the partner report');
    expect(late.summary).to.contain(
      "but the partner's report shows it executed (10.00 BRL, partner reference L-2",
    );
    expect(late.summary).to.contain('Check whether a retry was charged elsewhere');
    expect(late.details.settled).to.deep.include({ status: 'not_executed', attempt: 1 });
  });

  it("its caller's own PartnerNotExecuted, then shown: completed, and the next delivery replays", async () => {
    const partner = partnerName('caller');
    const anchor = await unknownIntent(fx.ledger, spec(partner, 'seen'));
    await place(fx.sql, anchor, { startedAt: minutes(base, 30) });
    const refusedSpec = spec(partner, 'refused');
    const refused = await notExecutedIntent(fx.ledger, refusedSpec);
    await place(fx.sql, refused, { startedAt: minutes(base, 60) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'seen', nsu: 'C-1', amount: '10.00', executedAt: minutes(base, 31) },
      { reference: 'refused', nsu: 'C-2', amount: '10.00', executedAt: minutes(base, 62) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, { coverage }) });
    expect(run.corrected).to.equal(1);
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), late_completion: 1 });
    const [late] = await discrepanciesOf(fx.sql, partner);
    expect(late.summary).to.contain('as not executed on attempt 1, as its caller reported');
    // The attempt's history keeps what its caller said, and how the run settled it.
    const history = await fx.sql.query(
      'SELECT attempt, outcome, resolution FROM intent_attempt_history WHERE intent_id = $1 ORDER BY attempt',
      [refused],
    );
    expect(history.rows).to.deep.equal([{ attempt: 1, outcome: 'not_executed', resolution: 'completed' }]);

    let calls = 0;
    const replay = await fx.ledger.run(refusedSpec, async () => {
      calls++;
      return { partnerReference: 'C-3' };
    });
    expect(calls).to.equal(0);
    expect(replay).to.deep.include({ replayed: true, partnerReference: 'C-2' });
  });

  it('a row dated before the attempt started (beyond clockSkew) is not its execution: orphan, not corrected', async () => {
    const partner = partnerName('early');
    const anchor = await unknownIntent(fx.ledger, spec(partner, 'seen'));
    await place(fx.sql, anchor, { startedAt: minutes(base, 30) });
    const refused = await notExecutedIntent(fx.ledger, spec(partner, 'refused'));
    await place(fx.sql, refused, { startedAt: minutes(base, 120) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'seen', nsu: 'E-1', amount: '10.00', executedAt: minutes(base, 31) },
      { reference: 'refused', nsu: 'E-2', amount: '10.00', executedAt: minutes(base, 60) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, { coverage }) });
    expect(run.corrected).to.equal(0);
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect((await intentRow(fx.sql, refused)).status).to.equal('not_executed');
  });

  it('claimed again before report 2 and not executed again: the row is the earlier attempt, an orphan as before', async () => {
    const partner = partnerName('reclaimed');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    // The next delivery claims attempt 2 an hour later; the partner answers 429 (not executed).
    const missedSpec = spec(partner, 'missed');
    await fx.ledger
      .run(missedSpec, async () => {
        throw new PartnerNotExecuted('429');
      })
      .catch(() => undefined);
    await place(fx.sql, missed, { startedAt: minutes(base, 120) });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'not_executed', attempt: 2 });

    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, correctedReport(partner), { coverage }),
    });
    // Today's behaviour, kept: attempt 1's execution is no proof about attempt 2.
    expect(run.corrected).to.equal(0);
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'not_executed', attempt: 2 });
  });

  it('claimed again and in flight when report 2 arrives: untouched but flagged at once, and a duplicate once attempt 2 is listed', async () => {
    const partner = partnerName('inflight');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    const claim = await fx.ledger.begin(spec(partner, 'missed'));
    if (claim.kind !== 'claimed') throw new Error('expected a claim of attempt 2');
    expect(claim.attempt).to.equal(2);

    const [second] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, correctedReport(partner), { coverage }),
    });
    expect(second.corrected).to.equal(0);
    // Attempt 1 executed while attempt 2 is under way: a person is told now (earlierAttemptRows.test.ts).
    expect(second.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'in_progress', attempt: 2 });

    await fx.ledger.complete(missed, 2, { partnerReference: 'L-3' });
    const later = writeCsv(fx.dir, `${partner}-3.csv`, [
      { reference: 'missed', nsu: 'L-2', amount: '10.00', executedAt: minutes(base, 61) },
      { reference: 'missed', nsu: 'L-3', amount: '10.00', executedAt: minutes(await dbNow(fx.sql), -1) },
    ]);
    const [third] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, later) });
    expect(third.discrepancies).to.deep.equal({ ...noDiscrepancies(), duplicate_execution: 1 });
  });

  it('re-running report 2 corrects nothing more, raises nothing and changes no table', async () => {
    const partner = partnerName('rerun');
    await provenAbsent(fx, partner, { base, coverage });
    const file = correctedReport(partner);
    const [first] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, { coverage }) });
    expect(first.corrected).to.equal(1);
    const before = await snapshot(fx.sql);
    const [again] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, { coverage }) });
    expect(again.status).to.equal('succeeded');
    expect(again.corrected).to.equal(0);
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(again.discrepancies).to.deep.equal(noDiscrepancies());
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });

  it('a rejected intent the report shows executed stays rejected, an orphan as before', async () => {
    const partner = partnerName('rejected');
    const anchor = await unknownIntent(fx.ledger, spec(partner, 'seen'));
    await place(fx.sql, anchor, { startedAt: minutes(base, 30) });
    const declined = await rejectedIntent(fx.ledger, spec(partner, 'declined'));
    await place(fx.sql, declined, { startedAt: minutes(base, 60) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'seen', nsu: 'R-1', amount: '10.00', executedAt: minutes(base, 31) },
      { reference: 'declined', nsu: 'R-2', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, { coverage }) });
    expect(run.corrected).to.equal(0);
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect((await intentRow(fx.sql, declined)).status).to.equal('rejected');
  });
  it('a row of the same reference dated after the window a proof looks at is another execution: no correction, an orphan', async () => {
    const partner = partnerName('later');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    // Days later in the partner's clock (far past start + settlementLag + clockSkew): a message to the same
    // recipient sent by somebody else, a new charge of the same order code. It is not attempt 1's execution.
    const later = writeCsv(fx.dir, `${partner}-later.csv`, [
      { reference: 'missed', nsu: 'L-9', amount: '10.00', executedAt: minutes(base, 60 + 3 * 24 * 60) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, later) });
    expect(run.corrected).to.equal(0);
    expect((await intentRow(fx.sql, missed)).status).to.equal('not_executed');
    expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.kind)).to.deep.equal([
      'orphan_partner_record',
    ]);
  });

  it('matched by amount and time alone, a row does not overturn a settlement: no correction, an orphan', async () => {
    const partner = partnerName('by-amount');
    const match = { by: 'amount', amountTolerance: '0', timeWindow: '10m' } as const;
    const missed = await unknownIntent(fx.ledger, spec(partner, 'missed', { amount: '77.70' }));
    await place(fx.sql, missed, { startedAt: minutes(base, 60) });
    await fx.sql.query(
      `UPDATE intents SET status = 'not_executed', settled_at = now(), resolved_by = 'test' WHERE id = $1`,
      [missed],
    );
    const report = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'somebody-else', nsu: 'A-1', amount: '77.70', executedAt: minutes(base, 61) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { match }) });
    expect(run.status, String(run.error)).to.equal('succeeded');
    expect(run.corrected).to.equal(0);
    expect((await intentRow(fx.sql, missed)).status).to.equal('not_executed');
  });
});
