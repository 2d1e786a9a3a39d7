import { expect } from 'chai';
import { PartnerNotExecuted } from '../../src/index.js';
import { startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  csvReconciler,
  dbNow,
  discrepanciesOf,
  fakePartnerReconciler,
  intentRow,
  minutes,
  noDiscrepancies,
  notExecutedIntent,
  partnerName,
  place,
  provenAbsent,
  seenRow,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * A report row that is the execution of an EARLIER attempt of an intent claimed again since
 * (src/reconcile/earlierAttempt.ts): attempt 1's outcome was unknown, a report proved it `not_executed`
 * (wrongly, or the partner listed it late), the next delivery claimed attempt 2, and now a report shows
 * attempt 1's execution, dated before attempt 2 started. It is no evidence that attempt 2 executed, and a
 * person must know at once whatever attempt 2's state: if attempt 2 executed too, the partner charged twice.
 *
 * The reconcilers' timings (support.ts): stuckAfter 15m, settlementLag 1h, clockSkew 15m (the default).
 * Attempt 1 starts at base + 60 min, so a row of it is dated up to base + 135 (start + lag + skew).
 */
describe('reconcile: a row of an earlier attempt of an intent claimed again', () => {
  const fx = useReconcileFixture('rec_earlier_attempt');
  let base: Date;
  let coverage: { from: Date; to: Date };

  beforeEach(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
    coverage = { from: base, to: minutes(base, 400) };
  });

  /** Attempt 2 of `ref` claimed now, its lease running (a worker is calling the partner). */
  async function claimAgain(partner: string, ref = 'missed'): Promise<void> {
    const claim = await fx.ledger.begin(spec(partner, ref));
    if (claim.kind !== 'claimed') throw new Error('expected a claim of attempt 2');
    expect(claim.attempt).to.equal(2);
  }

  /** Attempt 2 of `ref` claimed and left stuck: `in_progress`, started at `startMinute`, lease ended an hour ago. */
  async function stuckAgain(partner: string, intentId: string, startMinute: number, ref = 'missed') {
    await claimAgain(partner, ref);
    await place(fx.sql, intentId, { startedAt: minutes(base, startMinute), createdAt: minutes(base, 60) });
    expect(await intentRow(fx.sql, intentId)).to.deep.include({ status: 'in_progress', attempt: 2 });
  }

  /** Attempt 1's execution, a minute after it started (base + 61). */
  const attempt1Row = (ref = 'missed') => ({
    reference: ref,
    nsu: `${ref}-A1`,
    amount: '10.00',
    executedAt: minutes(base, 61),
  });

  it('attempt 2 in flight: the row is an orphan naming the earlier attempt, raised once, attempt 2 untouched', async () => {
    const partner = partnerName('inflight');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    await claimAgain(partner);

    const report = writeCsv(fx.dir, `${partner}-2.csv`, [attempt1Row()]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.status, String(run.error)).to.equal('succeeded');
    expect(run.corrected).to.equal(0);
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'in_progress', attempt: 2 });

    const [orphan] = await discrepanciesOf(fx.sql, partner);
    expect(orphan).to.deep.include({
      kind: 'orphan_partner_record',
      intent_id: missed,
      attempt: 2,
      amount_at_risk: '10.00',
      partner_reference: 'missed-A1',
      dedupe_key: `orphan_partner_record:${partner}:missed-A1|missed#1`,
    });
    expect(orphan.summary).to.contain(`for intent ${missed} (reference missed)`);
    expect(orphan.summary).to.contain('cannot be taken as the execution of its attempt 2');
    expect(orphan.summary).to.contain("an earlier attempt's execution");
    expect(orphan.summary).to.contain('Attempt 2 is under way (in_progress): if it executes as well');
    expect(orphan.details.earlierAttempt).to.include({ currentAttempt: 2 });

    // Re-run: the same row raises nothing new, changes nothing.
    const before = await snapshot(fx.sql);
    const [again] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, report, { coverage }),
    });
    expect(again.discrepancies).to.deep.equal(noDiscrepancies());
    expect(await snapshot(fx.sql)).to.deep.equal(before);

    // Attempt 2's worker dies: once stuck, the same row (now known) still raises nothing new and decides nothing.
    await place(fx.sql, missed, { startedAt: minutes(base, 200), createdAt: minutes(base, 60) });
    const [stuck] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, report, { coverage }),
    });
    expect(stuck.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(stuck.discrepancies).to.deep.equal(noDiscrepancies());
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'in_progress', attempt: 2 });
  });

  it('attempt 2 stuck: the row does not complete it, nor does a covering report prove it absent', async () => {
    const partner = partnerName('stuck');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    // Attempt 2 started at base + 200, well after attempt 1's window (base + 135); its own window ends at
    // base + 275, inside the coverage: without the row, this report would prove it absent.
    await stuckAgain(partner, missed, 200);

    const report = writeCsv(fx.dir, `${partner}-2.csv`, [seenRow(base), attempt1Row()]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.status, String(run.error)).to.equal('succeeded');
    expect(run.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(await intentRow(fx.sql, missed)).to.deep.include({
      status: 'in_progress',
      attempt: 2,
      partner_reference: null,
    });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    const [orphan] = await discrepanciesOf(fx.sql, partner);
    expect(orphan).to.deep.include({
      kind: 'orphan_partner_record',
      intent_id: missed,
      attempt: 2,
      dedupe_key: `orphan_partner_record:${partner}:missed-A1|missed#1`,
    });
    expect(orphan.summary).to.contain('cannot be taken as the execution of its attempt 2');
    expect(orphan.summary).to.contain('Attempt 2 stays in_progress, and is not proven absent');

    // A later report covering attempt 2 without the row: attempt 1's execution is still on record, so
    // attempt 2's absence settles nothing (not_executed would have the next delivery charge again).
    const later = writeCsv(fx.dir, `${partner}-3.csv`, [seenRow(base)]);
    const [third] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, later, { coverage }),
    });
    expect(third.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(third.discrepancies).to.deep.equal(noDiscrepancies());
    expect((await intentRow(fx.sql, missed)).status).to.equal('in_progress');

    // Past the deadline it is unresolved as well, saying what is on record.
    const [late] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, later, { coverage, deadline: '1h' }),
    });
    expect(late.discrepancies).to.deep.equal({ ...noDiscrepancies(), unresolved: 1 });
    const unresolved = (await discrepanciesOf(fx.sql, partner)).find((d) => d.kind === 'unresolved');
    expect(unresolved.summary).to.contain("the only executions on record are an earlier attempt's");
  });

  it('attempt 2 unknown (its caller saw a reset): the row leaves it unknown, one orphan', async () => {
    const partner = partnerName('unknown2');
    const missedSpec = spec(partner, 'missed');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    await unknownIntent(fx.ledger, missedSpec);
    await place(fx.sql, missed, { startedAt: minutes(base, 200), createdAt: minutes(base, 60) });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'unknown', attempt: 2 });

    const report = writeCsv(fx.dir, `${partner}-2.csv`, [attempt1Row()]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'unknown', attempt: 2 });
  });

  it("in doubt (dated within both attempts' windows): attempt 2 is left stuck and the row flagged", async () => {
    const partner = partnerName('doubt');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    // Attempt 2 started at base + 120, inside attempt 1's window (up to base + 135). A row at base + 125 is
    // after attempt 2's start minus clockSkew (base + 105), so it could be attempt 2's, and before the end of
    // attempt 1's window, so it could be attempt 1's.
    await stuckAgain(partner, missed, 120);
    const report = writeCsv(fx.dir, `${partner}-2.csv`, [
      { reference: 'missed', nsu: 'D-1', amount: '10.00', executedAt: minutes(base, 125) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    expect((await intentRow(fx.sql, missed)).status).to.equal('in_progress');
  });

  it("with attempt 2's own row beside it: completed with attempt 2's reference, and a duplicate", async () => {
    const partner = partnerName('both');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    await stuckAgain(partner, missed, 200);
    // Attempt 2's execution dated 5 minutes before its start by our clock: within clockSkew, and long
    // after attempt 1's window, so it is attempt 2's.
    const report = writeCsv(fx.dir, `${partner}-2.csv`, [
      attempt1Row(),
      { reference: 'missed', nsu: 'missed-A2', amount: '10.00', executedAt: minutes(base, 195) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    // Not the earliest row's reference: that one is attempt 1's.
    expect(await intentRow(fx.sql, missed)).to.deep.include({
      status: 'completed',
      attempt: 2,
      partner_reference: 'missed-A2',
    });
    // One discrepancy showing both rows, not an orphan beside it.
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), duplicate_execution: 1 });
    const [duplicate] = await discrepanciesOf(fx.sql, partner);
    expect(duplicate.details.executions).to.equal(2);
  });

  it('attempt 2 completed by its caller, then attempt 1 shown: flagged, not taken as attempt 2', async () => {
    const partner = partnerName('completed');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    await claimAgain(partner);
    await fx.ledger.complete(missed, 2, { partnerReference: 'missed-A2' });
    await place(fx.sql, missed, { startedAt: minutes(base, 200), createdAt: minutes(base, 60) });

    // Beside it, `quick`: attempt 1 answered 429 at base + 60, attempt 2 charged a second later and its
    // caller recorded the partner reference. Its row is dated inside attempt 1's window, yet it carries
    // attempt 2's own reference: attempt 2's execution, nothing to flag.
    const quickSpec = spec(partner, 'quick');
    const quick = await notExecutedIntent(fx.ledger, quickSpec);
    await fx.sql.query(`UPDATE intent_attempts SET started_at = $2 WHERE intent_id = $1 AND attempt = 1`, [
      quick,
      minutes(base, 60),
    ]);
    await fx.ledger.run(quickSpec, async () => ({ partnerReference: 'quick-A2' }));
    await place(fx.sql, quick, { startedAt: minutes(base, 60.02), createdAt: minutes(base, 60) });
    expect(await intentRow(fx.sql, quick)).to.deep.include({ status: 'completed', attempt: 2 });

    const report = writeCsv(fx.dir, `${partner}-2.csv`, [
      attempt1Row(),
      { reference: 'quick', nsu: 'quick-A2', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    const [orphan] = await discrepanciesOf(fx.sql, partner);
    expect(orphan).to.deep.include({ intent_id: missed, attempt: 2, amount_at_risk: '10.00' });
    expect(orphan.summary).to.contain('Attempt 2 completed as well: the partner has probably charged twice.');
    expect(await intentRow(fx.sql, missed)).to.deep.include({
      status: 'completed',
      partner_reference: 'missed-A2',
    });

    // Attempt 2's row listed later: both on record, a duplicate.
    const later = writeCsv(fx.dir, `${partner}-3.csv`, [
      attempt1Row(),
      { reference: 'missed', nsu: 'missed-A2', amount: '10.00', executedAt: minutes(base, 201) },
    ]);
    const [third] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, later, { coverage }),
    });
    expect(third.discrepancies).to.deep.equal({ ...noDiscrepancies(), duplicate_execution: 1 });
  });

  it('attempt 2 not executed again: the orphan says the next delivery would charge again', async () => {
    const partner = partnerName('again');
    const missed = await provenAbsent(fx, partner, { base, coverage });
    await fx.ledger
      .run(spec(partner, 'missed'), async () => {
        throw new PartnerNotExecuted('429');
      })
      .catch(() => undefined);
    await place(fx.sql, missed, { startedAt: minutes(base, 200), createdAt: minutes(base, 60) });
    expect(await intentRow(fx.sql, missed)).to.deep.include({ status: 'not_executed', attempt: 2 });
    const report = writeCsv(fx.dir, `${partner}-2.csv`, [attempt1Row()]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    const [orphan] = await discrepanciesOf(fx.sql, partner);
    expect(orphan.summary).to.contain('Attempt 2 is recorded as not executed: the next delivery claims');
  });

  it('only under a key the partner honours is an earlier attempt the same execution', async () => {
    const partner = partnerName('honoured');
    // `missed` as before; `kept` claimed attempt 2 from unknown under a key the partner deduplicates on.
    const missed = await provenAbsent(fx, partner, { base, coverage });
    await stuckAgain(partner, missed, 200);
    const keptSpec = spec(partner, 'kept', { partnerHonoursKey: true });
    const kept = await unknownIntent(fx.ledger, keptSpec);
    await place(fx.sql, kept, { startedAt: minutes(base, 60) });
    const claim = await fx.ledger.begin(keptSpec);
    if (claim.kind !== 'claimed') throw new Error('expected a claim of attempt 2');
    await place(fx.sql, kept, { startedAt: minutes(base, 200), createdAt: minutes(base, 60) });

    const report = writeCsv(fx.dir, `${partner}-2.csv`, [attempt1Row(), attempt1Row('kept')]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, report, { coverage }) });
    expect(run.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    expect(await intentRow(fx.sql, kept)).to.deep.include({
      status: 'completed',
      partner_reference: 'kept-A1',
    });
    expect(await intentRow(fx.sql, missed)).to.deep.include({
      status: 'in_progress',
      partner_reference: null,
    });
    expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
  });

  it("lookup mode: the partner's answer about attempt 2 lists only attempt 1's execution, which settles nothing", async () => {
    const token = 'tok_earlier_attempt';
    const fake = await startFakePartner({ token });
    try {
      const partner = partnerName('lookup');
      const reference = `${partner}-order`;
      const orderSpec = spec(partner, reference);
      // Attempt 1: its caller reported PartnerNotExecuted; attempt 2: a reset, so unknown.
      const id = await notExecutedIntent(fx.ledger, orderSpec);
      await unknownIntent(fx.ledger, orderSpec);
      await fx.sql.query(`UPDATE intent_attempts SET started_at = $2 WHERE intent_id = $1 AND attempt = 1`, [
        id,
        minutes(base, 60),
      ]);
      await place(fx.sql, id, { startedAt: minutes(base, 200), createdAt: minutes(base, 60) });
      fake.seed([
        { id: 'ch_attempt1', reference, amount: '10.00', currency: 'BRL', executedAt: minutes(base, 61) },
      ]);
      const reconciler = fakePartnerReconciler(partner, {
        baseUrl: fake.url,
        path: '',
        auth: { env: 'ACME_TOKEN' },
        lookup: { path: '/v1/references/{reference}', notFound: { field: 'error', equals: 'not_found' } },
      });
      const [run] = await reconcile({ pool: fx.sql, reconciler, env: { ACME_TOKEN: token } });
      expect(run.status, String(run.error)).to.equal('succeeded');
      expect(run.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      expect(await intentRow(fx.sql, id)).to.deep.include({ status: 'unknown', attempt: 2 });
      expect(run.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 1 });
    } finally {
      await fake.close();
    }
  });
});
