import { expect } from 'chai';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import {
  completedIntent,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  inProgressIntent,
  intentRow,
  minutes,
  notExecutedIntent,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * One partner, one CSV report, every outcome of a run at once. The reconciler declares the report complete
 * for [base, base + 8h] (its first and last execution fall on those ends), settlementLag is 1h, so absence
 * proves "not executed" for attempts started in [base, base + 7h].
 */
describe('reconcile: CSV report outcomes', () => {
  const fx = useReconcileFixture('rec_outcomes');
  const partner = partnerName('acme');
  const ids: Record<string, string> = {};
  let base: Date;
  let file: string;
  let report: ReconciliationResult;
  let declared: { coverage: { from: Date; to: Date } };
  const recordOf = async (nsu: string) =>
    (
      await fx.sql.query('SELECT id FROM partner_records WHERE partner = $1 AND partner_reference = $2', [
        partner,
        nsu,
      ])
    ).rows[0].id;

  before(async () => {
    const { ledger, sql } = fx;
    base = minutes(await dbNow(sql), -10 * 60);
    const at = (m: number) => minutes(base, m);

    ids.found = await unknownIntent(ledger, spec(partner, 'found'));
    await place(sql, ids.found, { startedAt: at(60) });
    ids.twice = await inProgressIntent(ledger, spec(partner, 'twice'));
    await place(sql, ids.twice, { startedAt: at(60) });
    ids.amount = await unknownIntent(ledger, spec(partner, 'amount'));
    await place(sql, ids.amount, { startedAt: at(90) });
    ids.currency = await unknownIntent(ledger, spec(partner, 'currency'));
    await place(sql, ids.currency, { startedAt: at(100) });
    ids.absent = await unknownIntent(ledger, spec(partner, 'absent'));
    await place(sql, ids.absent, { startedAt: at(120) });
    // Started 7h30 after base: start + lag is after the coverage end, so its absence proves nothing (yet).
    ids.late = await unknownIntent(ledger, spec(partner, 'late'));
    await place(sql, ids.late, { startedAt: at(450), createdAt: at(450) });
    // Started before the coverage, created 4 days ago: past the deadline, nobody can tell.
    ids.old = await unknownIntent(ledger, spec(partner, 'old'));
    await place(sql, ids.old, { startedAt: at(-60), createdAt: minutes(base, -4 * 24 * 60) });
    ids.missing = await completedIntent(ledger, spec(partner, 'missing'), 'NSU-MISSING');
    await place(sql, ids.missing, { startedAt: at(180) });
    ids.anchorFirst = await completedIntent(ledger, spec(partner, 'anchor-first'), 'NSU-FIRST');
    await place(sql, ids.anchorFirst, { startedAt: at(-5) });
    ids.anchorLast = await completedIntent(ledger, spec(partner, 'anchor-last'), 'NSU-LAST');
    await place(sql, ids.anchorLast, { startedAt: at(475) });
    ids.notExecuted = await notExecutedIntent(ledger, spec(partner, 'retry-me'));
    await place(sql, ids.notExecuted, { startedAt: at(200) });
    // Its lease is still running: the reconciler must not touch it even though the report has it.
    ids.running = await inProgressIntent(ledger, spec(partner, 'running'));

    file = writeCsv(fx.dir, 'outcomes.csv', [
      { reference: 'anchor-first', nsu: 'NSU-FIRST', amount: '10.00', executedAt: at(0) },
      { reference: 'found', nsu: 'NSU-FOUND', amount: '10.00', executedAt: at(61) },
      { reference: 'twice', nsu: 'NSU-TWICE-2', amount: '10.00', executedAt: at(65) },
      { reference: 'twice', nsu: 'NSU-TWICE-1', amount: '10.00', executedAt: at(61) },
      { reference: 'amount', nsu: 'NSU-AMOUNT', amount: '12.00', executedAt: at(91) },
      { reference: 'currency', nsu: 'NSU-CURRENCY', amount: '10.00', currency: 'USD', executedAt: at(101) },
      { reference: 'nobody', nsu: 'NSU-ORPHAN', amount: '99.90', executedAt: at(130) },
      { reference: 'retry-me', nsu: 'NSU-RETRY', amount: '10.00', executedAt: at(201) },
      { reference: 'running', nsu: 'NSU-RUNNING', amount: '10.00', executedAt: at(300) },
      { reference: 'anchor-last', nsu: 'NSU-LAST', amount: '10.00', executedAt: at(480) },
    ]);
    declared = { coverage: { from: base, to: minutes(base, 480) } };
    report = (await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, declared) }))[0];
  });

  it('reports the run: counts, the declared coverage, checksum, and records it', async () => {
    expect(report.status).to.equal('succeeded');
    expect(report.error).to.equal(null);
    expect(report).to.deep.include({
      partner,
      source: file,
      rowsRead: 10,
      rowsRejected: 0,
      rejected: [],
      matched: 9,
      resolved: { completed: 4, notExecuted: 1 },
      corrected: 1,
      discrepancies: {
        duplicate_execution: 1,
        amount_mismatch: 1,
        currency_mismatch: 1,
        missing_at_partner: 1,
        orphan_partner_record: 1,
        unresolved: 1,
        late_completion: 1,
        ambiguous_match: 0,
      },
    });
    expect(report.coverage).to.deep.equal({ from: minutes(base, 0), to: minutes(base, 480) });
    expect(report.checksum).to.match(/^[0-9a-f]{64}$/);
    const run = await fx.sql.query('SELECT * FROM reconciliation_runs WHERE id = $1', [report.runId]);
    expect(run.rows[0]).to.deep.include({
      partner,
      trigger: 'manual',
      source: file,
      checksum: report.checksum,
      status: 'succeeded',
      rows_read: 10,
      rows_rejected: 0,
      matched: 9,
      resolved_completed: 4,
      resolved_not_executed: 1,
      error: null,
      slot: null,
    });
    expect(run.rows[0].discrepancies).to.deep.equal(report.discrepancies);
    expect(run.rows[0].coverage_from).to.deep.equal(minutes(base, 0));
    expect(run.rows[0].finished_at).to.be.instanceOf(Date);
  });

  it('found once: completed with the partner reference, resolved by the run, on the intent and its attempt', async () => {
    const row = await intentRow(fx.sql, ids.found);
    const by = `reconciler:run-${report.runId}`;
    expect(row).to.deep.include({
      status: 'completed',
      attempt: 1,
      partner_reference: 'NSU-FOUND',
      resolved_by: by,
      resolution: 'completed',
      attempt_resolved_by: by,
    });
    expect(row.settled_at).to.be.instanceOf(Date);
    // Settled: no lease held any more (the row keeps the attempt's, for its history).
    expect((await fx.ledger.get(partner, spec(partner, 'found').key))?.leaseExpiresAt).to.equal(null);
    expect(row.resolved_at).to.be.instanceOf(Date);
    // The caller replays the reconciled result and the partner is not called again.
    let calls = 0;
    const replay = await fx.ledger.run(spec(partner, 'found'), async () => {
      calls += 1;
      return {};
    });
    expect(calls).to.equal(0);
    expect(replay).to.include({ status: 'completed', replayed: true, partnerReference: 'NSU-FOUND' });
  });

  it('found twice (a dead in_progress worker): completed with the earliest row, plus duplicate_execution', async () => {
    expect(await intentRow(fx.sql, ids.twice)).to.deep.include({
      status: 'completed',
      partner_reference: 'NSU-TWICE-1',
      resolution: 'completed',
    });
    const found = (await discrepanciesOf(fx.sql, partner)).find((d) => d.kind === 'duplicate_execution');
    const records = await fx.sql.query<{ id: string }>(
      `SELECT id FROM partner_records WHERE partner = $1 AND reference = 'twice' ORDER BY id`,
      [partner],
    );
    expect(found).to.deep.include({
      intent_id: ids.twice,
      attempt: 1,
      run_id: report.runId,
      reference: 'twice',
      partner_reference: 'NSU-TWICE-1',
      amount_at_risk: '10.00',
      currency: 'BRL',
      dedupe_key: `duplicate_execution:${ids.twice}`,
      status: 'open',
      partner_record_ids: records.rows.map((r) => r.id),
      summary: `The partner executed intent ${ids.twice} (reference twice) 2 times, for 10.00 BRL asked once: 10.00 BRL charged beyond it.`,
      history: [{ to: 'open', actor: `reconciler:run-${report.runId}` }],
    });
    expect(found.details.executions).to.equal(2);
    expect(
      found.details.rows.map((r: { line: number; partnerReference: string }) => [r.line, r.partnerReference]),
    ).to.deep.equal([
      [5, 'NSU-TWICE-1'],
      [4, 'NSU-TWICE-2'],
    ]);
    expect(found.details.rows.map((r: { source: string }) => r.source)).to.deep.equal([file, file]);
  });

  it('amount and currency differ: completed, plus amount_mismatch / currency_mismatch with the amount at risk', async () => {
    expect((await intentRow(fx.sql, ids.amount)).status).to.equal('completed');
    expect((await intentRow(fx.sql, ids.currency)).status).to.equal('completed');
    const all = await discrepanciesOf(fx.sql, partner);
    expect(all.find((d) => d.kind === 'amount_mismatch')).to.deep.include({
      intent_id: ids.amount,
      amount_at_risk: '2.00',
      currency: 'BRL',
      partner_reference: 'NSU-AMOUNT',
      dedupe_key: `amount_mismatch:${ids.amount}:NSU-AMOUNT|amount#1`,
      summary: `The partner executed 12.00 BRL for intent ${ids.amount} (reference amount), which is for 10.00 BRL.`,
    });
    expect(all.find((d) => d.kind === 'currency_mismatch')).to.deep.include({
      intent_id: ids.currency,
      amount_at_risk: '10.00',
      currency: 'USD',
      dedupe_key: `currency_mismatch:${ids.currency}:NSU-CURRENCY|currency#1`,
    });
  });

  it('absent under the coverage: not_executed, and the next ledger.run really retries (attempt 2)', async () => {
    expect(await intentRow(fx.sql, ids.absent)).to.deep.include({
      status: 'not_executed',
      resolved_by: `reconciler:run-${report.runId}`,
      resolution: 'not_executed',
    });
    expect((await fx.ledger.get(partner, spec(partner, 'absent').key))?.leaseExpiresAt).to.equal(null);
    const attempts: number[] = [];
    const result = await fx.ledger.run(spec(partner, 'absent'), async (context) => {
      attempts.push(context.attempt);
      return { partnerReference: 'NSU-ABSENT-2' };
    });
    expect(attempts).to.deep.equal([2]);
    expect(result).to.include({
      status: 'completed',
      replayed: false,
      attempt: 2,
      partnerReference: 'NSU-ABSENT-2',
    });
  });

  it('absent but started too close to the coverage end: untouched, nothing flagged', async () => {
    expect(await intentRow(fx.sql, ids.late)).to.deep.include({
      status: 'unknown',
      resolution: null,
      resolved_by: 'caller',
    });
    expect((await discrepanciesOf(fx.sql, partner)).filter((d) => d.intent_id === ids.late)).to.deep.equal(
      [],
    );
  });

  it('absent, outside the coverage and past the deadline: stays unknown, plus unresolved', async () => {
    expect(await intentRow(fx.sql, ids.old)).to.deep.include({ status: 'unknown', resolution: null });
    const found = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.kind === 'unresolved');
    expect(found).to.have.length(1);
    expect(found[0]).to.deep.include({
      intent_id: ids.old,
      attempt: 1,
      amount_at_risk: '10.00',
      currency: 'BRL',
      dedupe_key: `unresolved:${ids.old}:1`,
      partner_record_ids: [],
    });
  });

  it('completed by the caller inside the coverage but absent: missing_at_partner', async () => {
    const found = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.kind === 'missing_at_partner');
    expect(found).to.have.length(1);
    expect(found[0]).to.deep.include({
      intent_id: ids.missing,
      reference: 'missing',
      partner_reference: 'NSU-MISSING',
      amount_at_risk: '10.00',
      currency: 'BRL',
      dedupe_key: `missing_at_partner:${ids.missing}`,
    });
    expect((await intentRow(fx.sql, ids.missing)).status).to.equal('completed');
  });

  it('orphans: a row matching no intent', async () => {
    const orphans = (await discrepanciesOf(fx.sql, partner)).filter(
      (d) => d.kind === 'orphan_partner_record',
    );
    expect(orphans.map((d) => d.dedupe_key)).to.deep.equal([
      `orphan_partner_record:${partner}:NSU-ORPHAN|nobody#1`,
    ]);
    expect(orphans[0]).to.deep.include({
      intent_id: null,
      reference: 'nobody',
      amount_at_risk: '99.90',
      currency: 'BRL',
      partner_record_ids: [await recordOf('NSU-ORPHAN')],
      summary:
        'The partner reports an execution of 99.90 BRL (reference nobody) (partner reference NSU-ORPHAN) on line 8 that matches no intent of ours.',
    });
  });

  it('a row of an intent its caller reported not_executed, on that attempt: completed, + late_completion', async () => {
    expect(await intentRow(fx.sql, ids.notExecuted)).to.deep.include({
      status: 'completed',
      attempt: 1,
      partner_reference: 'NSU-RETRY',
      resolution: 'completed',
    });
    const late = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.kind === 'late_completion');
    expect(late).to.have.length(1);
    expect(late[0]).to.deep.include({
      intent_id: ids.notExecuted,
      attempt: 1,
      amount_at_risk: '10.00',
      currency: 'BRL',
      partner_reference: 'NSU-RETRY',
      partner_record_ids: [await recordOf('NSU-RETRY')],
      dedupe_key: `late_completion:${ids.notExecuted}:1`,
    });
    expect(late[0].summary).to.contain('as not executed on attempt 1, as its caller reported');
    expect(late[0].summary).to.contain("but the partner's report shows it executed");
  });

  it('an intent whose lease is still running is not touched, though its row is remembered', async () => {
    expect(await intentRow(fx.sql, ids.running)).to.deep.include({ status: 'in_progress', resolution: null });
    const record = await fx.sql.query(
      `SELECT identity, intent_id, run_id, line, amount::text FROM partner_records WHERE partner = $1 AND reference = 'running'`,
      [partner],
    );
    expect(record.rows).to.deep.equal([
      {
        identity: 'NSU-RUNNING|running#1',
        intent_id: ids.running,
        run_id: report.runId,
        line: 10,
        amount: '10.00',
      },
    ]);
  });

  it('re-running the same file resolves nothing new, flags nothing new and changes no table', async () => {
    const before = await snapshot(fx.sql);
    const [again] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, declared) });
    expect(again.status).to.equal('succeeded');
    expect(again.checksum).to.equal(report.checksum);
    expect(again.runId).to.not.equal(report.runId);
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(again.corrected).to.equal(0);
    expect(again.discrepancies).to.deep.equal({
      duplicate_execution: 0,
      amount_mismatch: 0,
      currency_mismatch: 0,
      missing_at_partner: 0,
      orphan_partner_record: 0,
      unresolved: 0,
      late_completion: 0,
      ambiguous_match: 0,
    });
    expect(again.matched).to.equal(9);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });
});
