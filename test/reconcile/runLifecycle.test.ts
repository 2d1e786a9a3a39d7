import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { completeAttempt } from '../../src/ledger/sql/completeAttempt.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { capturingLogger } from '../support/testLedger.js';
import {
  type CsvRow,
  completedIntent,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  inProgressIntent,
  intentRow,
  minutes,
  noDiscrepancies,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

describe('reconcile: runs, dry runs, failures and races', () => {
  const fx = useReconcileFixture('rec_lifecycle');
  let base: Date;
  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  /** What scenario reports declare they cover: [base, base + 400 min], their first and last rows. */
  const declared = () => ({ coverage: { from: base, to: minutes(base, 400) } });

  /** A partner with a found intent, an absent one and an orphan row; returns the report file. */
  async function scenario(partner: string): Promise<{ file: string; found: string; absent: string }> {
    const found = await unknownIntent(fx.ledger, spec(partner, `${partner}-found`));
    await place(fx.sql, found, { startedAt: minutes(base, 60) });
    const absent = await unknownIntent(fx.ledger, spec(partner, `${partner}-absent`));
    await place(fx.sql, absent, { startedAt: minutes(base, 120) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: `${partner}-found`, nsu: `${partner}-N1`, amount: '10.00', executedAt: minutes(base, 0) },
      { reference: 'stranger', nsu: `${partner}-N2`, amount: '5.00', executedAt: minutes(base, 400) },
    ]);
    return { file, found, absent };
  }

  async function runRow(runId: string | null) {
    return (await fx.sql.query('SELECT * FROM reconciliation_runs WHERE id = $1', [runId])).rows[0];
  }

  it('dry run: reports what would change, changes no table, records a dry_run run; a real run then does it', async () => {
    const partner = partnerName('dry');
    const { file, found, absent } = await scenario(partner);
    const before = await snapshot(fx.sql);
    const [dry] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, declared()),
      dryRun: true,
    });
    expect(dry).to.deep.include({
      status: 'dry_run',
      rowsRead: 2,
      matched: 1,
      resolved: { completed: 1, notExecuted: 1 },
      discrepancies: { ...noDiscrepancies(), orphan_partner_record: 1 },
      error: null,
    });
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect(await runRow(dry.runId)).to.deep.include({
      status: 'dry_run',
      rows_read: 2,
      matched: 1,
      resolved_completed: 1,
      resolved_not_executed: 1,
      discrepancies: dry.discrepancies,
    });

    const [real] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, declared()) });
    expect(real).to.deep.include({
      status: 'succeeded',
      resolved: dry.resolved,
      discrepancies: dry.discrepancies,
    });
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
  });

  it('too many rejected rows: the run fails, says why, lists them, and applies nothing', async () => {
    const partner = partnerName('rejects');
    const { found } = await scenario(partner);
    const file = join(fx.dir, `${partner}-bad.csv`);
    writeFileSync(
      file,
      [
        'reference,nsu,amount,currency,executed_at',
        `${partner}-found,${partner}-N1,10.00,BRL,${minutes(base, 0).toISOString()}`,
        `x,${partner}-N3,ten,BRL,${minutes(base, 10).toISOString()}`,
        `y,${partner}-N4,1.00,BRL,${minutes(base, 20).toISOString()}`,
        `z,${partner}-N5,2.00,BRL,${minutes(base, 30).toISOString()}`,
        '',
      ].join('\n'),
    );
    const before = await snapshot(fx.sql);
    const [failed] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    expect(failed).to.deep.include({
      status: 'failed',
      error: '1 of 4 rows rejected (25%), above maxRejectedRatio 0.01',
      rowsRead: 4,
      rowsRejected: 1,
      matched: 0,
      resolved: { completed: 0, notExecuted: 0 },
      discrepancies: noDiscrepancies(),
      coverage: null,
    });
    expect(failed.rejected).to.deep.equal([
      { line: 3, field: 'amount', reason: '"ten" is not a valid amount: unexpected character "t"' },
    ]);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect(await runRow(failed.runId)).to.deep.include({
      status: 'failed',
      error: failed.error,
      rows_read: 4,
      rows_rejected: 1,
      rejected: failed.rejected,
    });

    // Under a looser threshold the same file applies, rejected row still listed.
    const [loose] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, { maxRejectedRatio: 0.25 }),
    });
    expect(loose).to.deep.include({ status: 'succeeded', rowsRead: 4, rowsRejected: 1, matched: 1 });
    expect(loose.rejected).to.deep.equal(failed.rejected);
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
  });

  it('rejected rows: the report lists every one (up to 10,000), the run row the first 1,000, counts exact', async () => {
    const partner = partnerName('many-rejects');
    const rows: CsvRow[] = [];
    for (let i = 0; i < 1_500; i++)
      rows.push({ reference: `r${i}`, amount: 'n/a', executedAt: minutes(base, 1) });
    const file = writeCsv(fx.dir, `${partner}.csv`, rows);
    const [failed] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    expect(failed.error).to.equal('1500 of 1500 rows rejected (100%), above maxRejectedRatio 0.01');
    expect(failed.rowsRejected).to.equal(1_500);
    expect(failed.rejected).to.have.length(1_500);
    expect(failed.rejected[1_499]).to.deep.equal({
      line: 1_501,
      field: 'amount',
      reason: '"n/a" is not a valid amount: unexpected character "n"',
    });
    const run = await runRow(failed.runId);
    expect(run.rows_rejected).to.equal(1_500);
    expect(run.rejected).to.have.length(1_000);
    expect(run.rejected[999]).to.deep.equal(failed.rejected[999]);
  });

  it('a file that cannot be read as a whole: failed run with the reader message, nothing applied', async () => {
    const partner = partnerName('format');
    await scenario(partner);
    const file = join(fx.dir, `${partner}-nocol.csv`);
    writeFileSync(
      file,
      `reference,amount,currency,executed_at\n${partner}-found,10.00,BRL,${base.toISOString()}\n`,
    );
    const before = await snapshot(fx.sql);
    const [failed] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    const message = `${file}: column "nsu" (partnerReference) not found in header; found: reference, amount, currency, executed_at`;
    expect(failed).to.deep.include({ status: 'failed', error: message, rowsRead: 0, matched: 0 });
    expect(failed.checksum).to.match(/^[0-9a-f]{64}$/);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect(await runRow(failed.runId)).to.deep.include({ status: 'failed', error: message });

    const [missing] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, join(fx.dir, 'nope.csv')),
    });
    expect(missing.status).to.equal('failed');
    expect(missing.error).to.contain('ENOENT');
  });

  it('abort while reading: stops, rolls back, nothing applied, run recorded as failed "aborted"', async () => {
    const partner = partnerName('abort');
    const intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-found`));
    await place(fx.sql, intentId, { startedAt: minutes(base, 60) });
    const rows: CsvRow[] = [
      { reference: `${partner}-found`, nsu: 'A-1', amount: '10.00', executedAt: minutes(base, 61) },
    ];
    for (let i = 0; i < 20_000; i++)
      rows.push({ nsu: `${partner}-X${i}`, amount: '1.00', executedAt: minutes(base, 62) });
    const file = writeCsv(fx.dir, `${partner}.csv`, rows);
    const controller = new AbortController();
    const entries: { level: string; object: object; message: string }[] = [];
    const logger = capturingLogger(entries);
    const watcher = { ...logger, child: () => watcher } as typeof logger;
    watcher.debug = (object, message) => {
      entries.push({ level: 'debug', object, message });
      if (message === 'report batch staged') controller.abort();
    };
    const before = await snapshot(fx.sql);
    const [aborted] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file),
      signal: controller.signal,
      logger: watcher,
    });
    expect(aborted).to.deep.include({ status: 'failed', error: 'aborted', matched: 0, coverage: null });
    expect(aborted.rowsRead).to.be.greaterThan(0).and.lessThan(20_001);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect(await runRow(aborted.runId)).to.deep.include({ status: 'failed', error: 'aborted' });
    expect((await intentRow(fx.sql, intentId)).status).to.equal('unknown');

    // Already aborted: nothing is read at all.
    const [early] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file),
      signal: AbortSignal.abort(),
    });
    expect(early).to.deep.include({ status: 'failed', error: 'aborted', rowsRead: 0, checksum: null });
  });

  it('scheduled runs: the slot is elected in PostgreSQL, the loser skips without reading anything', async () => {
    const partner = partnerName('slot');
    const { file } = await scenario(partner);
    const slot = new Date('2030-01-01T10:15:00.000Z');
    const config = csvReconciler(partner, file);
    const both = await Promise.all([
      reconcile({ pool: fx.sql, reconciler: config, trigger: 'schedule', slot, owner: 'worker-a' }),
      reconcile({ pool: fx.sql, reconciler: config, trigger: 'schedule', slot, owner: 'worker-b' }),
    ]);
    const statuses = both.map(([r]) => r.status).sort();
    expect(statuses).to.deep.equal(['skipped', 'succeeded']);
    const skipped = both.map(([r]) => r).find((r) => r.status === 'skipped')!;
    expect(skipped).to.deep.include({ runId: null, rowsRead: 0, checksum: null });

    // A third worker, whose file does not even exist, skips too: it never gets to read.
    const [late] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, join(fx.dir, 'absent.csv')),
      trigger: 'schedule',
      slot,
    });
    expect(late.status).to.equal('skipped');
    const runs = await fx.sql.query(
      'SELECT trigger, owner, status FROM reconciliation_runs WHERE partner = $1',
      [partner],
    );
    expect(runs.rows).to.have.length(1);
    expect(runs.rows[0]).to.deep.include({ trigger: 'schedule', status: 'succeeded' });
  });

  it('two runs of the same partner at once: each intent resolved once, each problem raised once', async () => {
    const partner = partnerName('concurrent');
    const { file, found, absent } = await scenario(partner);
    const config = csvReconciler(partner, file, declared());
    const both = await Promise.all([
      reconcile({ pool: fx.sql, reconciler: config }),
      reconcile({ pool: fx.sql, reconciler: config }),
    ]);
    const runs = both.map(([r]) => r);
    expect(runs.map((r) => r.status)).to.deep.equal(['succeeded', 'succeeded']);
    const total = (pick: (r: (typeof runs)[number]) => number) => runs.reduce((sum, r) => sum + pick(r), 0);
    expect(total((r) => r.resolved.completed)).to.equal(1);
    expect(total((r) => r.resolved.notExecuted)).to.equal(1);
    expect(total((r) => r.discrepancies.orphan_partner_record)).to.equal(1);
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.kind)).to.deep.equal([
      'orphan_partner_record',
    ]);
  });

  it('a glob reconciles each file as its own run, in name order; no match gives a run without a report', async () => {
    const partner = partnerName('glob');
    const row = (n: string): CsvRow => ({
      nsu: `${partner}-${n}`,
      amount: '1.00',
      executedAt: minutes(base, 5),
    });
    writeCsv(fx.dir, `${partner}-b.csv`, [row('b')]);
    writeCsv(fx.dir, `${partner}-a.csv`, [row('a1'), row('a2')]);
    writeCsv(fx.dir, `${partner}-c.txt`, [row('c')]);
    const reports = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, join(fx.dir, `${partner}-*.csv`)),
    });
    expect(reports.map((r) => [r.source, r.rowsRead, r.status])).to.deep.equal([
      [join(fx.dir, `${partner}-a.csv`), 2, 'succeeded'],
      [join(fx.dir, `${partner}-b.csv`), 1, 'succeeded'],
    ]);
    expect(new Set(reports.map((r) => r.runId)).size).to.equal(2);
    expect(
      (await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, join(fx.dir, 'none-*.csv')) })).map(
        (r) => [r.source, r.noReport, r.rowsRead, r.status],
      ),
      'no match: one run without a report (test/reconcile/noReport.test.ts), nothing read',
    ).to.deep.equal([[`no report (no file matches ${join(fx.dir, 'none-*.csv')})`, true, 0, 'succeeded']]);
    // `file` overrides the glob.
    const single = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, join(fx.dir, `${partner}-*.csv`)),
      file: join(fx.dir, `${partner}-b.csv`),
    });
    expect(single.map((r) => r.source)).to.deep.equal([join(fx.dir, `${partner}-b.csv`)]);
  });

  it('an empty report is fine but proves nothing, even with a configured coverage', async () => {
    const partner = partnerName('empty');
    const intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-absent`));
    await place(fx.sql, intentId, { startedAt: minutes(base, 60) });
    const file = writeCsv(fx.dir, `${partner}.csv`, []);
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, { coverage: { from: base, to: minutes(base, 600) } }),
    });
    expect(run).to.deep.include({
      status: 'succeeded',
      rowsRead: 0,
      coverage: null,
      resolved: { completed: 0, notExecuted: 0 },
      discrepancies: noDiscrepancies(),
    });
    expect((await intentRow(fx.sql, intentId)).status).to.equal('unknown');
  });

  it('fencing: a caller completion that holds the intent when the run applies wins, and is not overwritten', async () => {
    const partner = partnerName('race');
    const intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-x`));
    await place(fx.sql, intentId, { startedAt: minutes(base, 60) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: `${partner}-x`, nsu: 'NSU-REPORT', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    const caller = await fx.sql.connect();
    try {
      // The caller's late answer is being written (row locked, not committed) when the run decides.
      await caller.query('BEGIN');
      const won = await completeAttempt(caller, {
        intentId,
        attempt: 1,
        partnerReference: 'NSU-CALLER',
        response: { late: true },
        by: 'caller',
      });
      expect(won?.id).to.equal(intentId);
      const running = reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
      await waitFor(async () => {
        const waiting = await fx.sql.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE intents%'`,
        );
        return waiting.rows[0].n === 1;
      });
      await caller.query('COMMIT');
      const [run] = await running;
      expect(run).to.deep.include({
        status: 'succeeded',
        matched: 1,
        resolved: { completed: 0, notExecuted: 0 },
      });
      expect(run.discrepancies).to.deep.equal(noDiscrepancies());
    } finally {
      caller.release();
    }
    expect(await intentRow(fx.sql, intentId)).to.deep.include({
      status: 'completed',
      partner_reference: 'NSU-CALLER',
      resolved_by: 'caller',
      resolution: null,
    });
  });

  it('a caller answering after the run resolved the intent gets a harmless replay when it is the same execution', async () => {
    const partner = partnerName('after');
    const intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-x`));
    await place(fx.sql, intentId, { startedAt: minutes(base, 60) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: `${partner}-x`, nsu: 'NSU-SAME', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    const [run] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    expect(run.resolved.completed).to.equal(1);
    const answer = await fx.ledger.complete(intentId, 1, { partnerReference: 'NSU-SAME' });
    expect(answer).to.include({ status: 'completed', replayed: true, partnerReference: 'NSU-SAME' });
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
  });

  it('an execution seen while the intent was still running settles it in a later run, even from another report', async () => {
    const partner = partnerName('memory');
    const intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-x`));
    await place(fx.sql, intentId, { startedAt: minutes(base, 60), leaseEndedAgo: '1 minute' });
    const first = writeCsv(fx.dir, `${partner}-1.csv`, [
      { reference: `${partner}-x`, nsu: 'NSU-EARLY', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    const [one] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, first) });
    expect(one).to.deep.include({ matched: 1, resolved: { completed: 0, notExecuted: 0 } });
    expect((await intentRow(fx.sql, intentId)).status).to.equal('unknown');

    await place(fx.sql, intentId, { startedAt: minutes(base, 60) });
    // The next report covers the attempt but does not list the execution again: memory, not absence, wins.
    const second = writeCsv(fx.dir, `${partner}-2.csv`, [
      { nsu: `${partner}-other-1`, amount: '1.00', executedAt: minutes(base, 0) },
      { nsu: `${partner}-other-2`, amount: '1.00', executedAt: minutes(base, 400) },
    ]);
    const [two] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, second) });
    expect(two.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    expect(await intentRow(fx.sql, intentId)).to.deep.include({
      status: 'completed',
      partner_reference: 'NSU-EARLY',
    });
  });

  it('a row remembered while its intent ran, listed again once we recorded a rejection: an orphan pointing at the first record', async () => {
    const partner = partnerName('known-orphan');
    const intentId = await inProgressIntent(fx.ledger, spec(partner, `${partner}-x`));
    const row = { reference: `${partner}-x`, nsu: 'NSU-X', amount: '10.00', executedAt: minutes(base, 61) };
    const first = writeCsv(fx.dir, `${partner}-1.csv`, [row]);
    const [one] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, first) });
    // Its lease is running: remembered, untouched, nothing to flag.
    expect(one).to.deep.include({ matched: 1, discrepancies: noDiscrepancies() });
    expect(await fx.ledger.reject(intentId, 1, 'card declined')).to.equal(true);

    const second = writeCsv(fx.dir, `${partner}-2.csv`, [
      row,
      { nsu: `${partner}-other`, amount: '1.00', executedAt: minutes(base, 62) },
    ]);
    const [two] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, second) });
    expect(two.discrepancies).to.deep.equal({ ...noDiscrepancies(), orphan_partner_record: 2 });
    const records = await fx.sql.query<{ id: string; partner_reference: string; run_id: string }>(
      'SELECT id, partner_reference, run_id FROM partner_records WHERE partner = $1 ORDER BY id',
      [partner],
    );
    expect(records.rows.map((r) => [r.partner_reference, r.run_id])).to.deep.equal([
      ['NSU-X', one.runId],
      [`${partner}-other`, two.runId],
    ]);
    const orphan = (await discrepanciesOf(fx.sql, partner)).find((d) => d.intent_id === intentId);
    expect(orphan).to.deep.include({
      kind: 'orphan_partner_record',
      run_id: two.runId,
      partner_record_ids: [records.rows[0].id],
    });
    expect(orphan.details.rows).to.deep.equal([
      {
        recordId: records.rows[0].id,
        line: 2,
        source: first,
        identity: `NSU-X|${partner}-x#1`,
        reference: `${partner}-x`,
        partnerReference: 'NSU-X',
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(base, 61).toISOString(),
      },
    ]);
    expect(orphan.details.intent).to.deep.include({ intentId, status: 'rejected' });
  });

  it('a completed intent whose second execution shows up in a later report is a duplicate_execution', async () => {
    const partner = partnerName('later-dup');
    const intentId = await completedIntent(fx.ledger, spec(partner, `${partner}-x`), 'NSU-1');
    await place(fx.sql, intentId, { startedAt: minutes(base, 60) });
    const first = writeCsv(fx.dir, `${partner}-1.csv`, [
      { reference: `${partner}-x`, nsu: 'NSU-1', amount: '10.00', executedAt: minutes(base, 61) },
    ]);
    const second = writeCsv(fx.dir, `${partner}-2.csv`, [
      { reference: `${partner}-x`, nsu: 'NSU-2', amount: '10.00', executedAt: minutes(base, 300) },
    ]);
    const [one] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, first) });
    expect(one.discrepancies).to.deep.equal(noDiscrepancies());
    const [two] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, second) });
    expect(two.discrepancies).to.deep.equal({ ...noDiscrepancies(), duplicate_execution: 1 });
    const [dup] = await discrepanciesOf(fx.sql, partner);
    expect(dup).to.deep.include({
      kind: 'duplicate_execution',
      intent_id: intentId,
      amount_at_risk: '10.00',
    });
    expect(dup.partner_record_ids).to.have.length(2);
    // Each execution names the file and run it came from.
    expect(
      dup.details.rows.map((row: { partnerReference: string; source: string; runId: string }) => [
        row.partnerReference,
        row.source,
        row.runId,
      ]),
    ).to.deep.equal([
      ['NSU-1', first, one.runId],
      ['NSU-2', second, two.runId],
    ]);
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('timed out waiting for the condition');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
