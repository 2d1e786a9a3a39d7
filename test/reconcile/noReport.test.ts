import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Pool } from 'pg';
import cielo from '../../reconcilers/cielo.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { ReconciliationWorker } from '../../src/reconcile/reconciliationWorker.js';
import { lockPartnerReconciliation } from '../../src/reconcile/sql/lockPartnerReconciliation.js';
import { runCli } from '../support/cliProcess.js';
import { capturingLogger } from '../support/testLedger.js';
import {
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

const DAY = 24 * 60;

/**
 * A file source whose glob matches no file (the partner stopped sending settlement files) still has stuck
 * intents passing their deadline (`deadline`, 3 days here): each must reach a person as `unresolved`, under
 * the key a run with a report would use, and nothing may be proven absent without a report. An intent
 * whose execution an earlier run stored is completed from it, exactly as a run with a report completes it.
 * Before, reconcile() returned no run at all, and those intents stayed stuck with nobody told.
 */
describe('reconcile: a file source that yields no report', () => {
  const fx = useReconcileFixture('rec_no_report');
  let now: Date;
  before(async () => {
    now = await dbNow(fx.sql);
  });

  /** A glob under the suite's dir that matches nothing (its directory exists, and is empty). */
  function emptyGlob(partner: string): string {
    mkdirSync(join(fx.dir, partner), { recursive: true });
    return join(fx.dir, partner, '*.csv');
  }

  /** Two intents stuck past the deadline (unknown, in_progress), one stuck within it, and some that are not stuck. */
  async function scenario(partner: string) {
    const old = await unknownIntent(fx.ledger, spec(partner, `${partner}-old`));
    await place(fx.sql, old, { startedAt: minutes(now, -4 * DAY) });
    const died = await inProgressIntent(fx.ledger, spec(partner, `${partner}-died`));
    await place(fx.sql, died, { startedAt: minutes(now, -5 * DAY) });
    const young = await unknownIntent(fx.ledger, spec(partner, `${partner}-young`));
    await place(fx.sql, young, { startedAt: minutes(now, -2 * DAY) });
    // Created long ago, but claimed again: its lease is running, so the reconciler does not touch it.
    const running = await inProgressIntent(fx.ledger, spec(partner, `${partner}-running`));
    await place(fx.sql, running, { startedAt: minutes(now, -4 * DAY), leaseEndedAgo: '-1 hour' });
    const done = await completedIntent(fx.ledger, spec(partner, `${partner}-done`), `${partner}-N1`);
    await place(fx.sql, done, { startedAt: minutes(now, -4 * DAY) });
    return { old, died, young, running, done };
  }

  async function runRow(runId: string | null) {
    return (await fx.sql.query('SELECT * FROM reconciliation_runs WHERE id = $1', [runId])).rows[0];
  }

  async function intentsOf(partner: string) {
    const result = await fx.sql.query(
      `SELECT i.*, a.outcome, a.resolution, a.resolved_by AS attempt_resolved_by
         FROM intents i JOIN intent_attempts a ON a.intent_id = i.id AND a.attempt = i.attempt
        WHERE i.partner = $1 ORDER BY i.id`,
      [partner],
    );
    return JSON.parse(JSON.stringify(result.rows));
  }

  it('raises unresolved for each intent stuck past its deadline, once over two calls, and settles none of them', async () => {
    const partner = partnerName('silent');
    const ids = await scenario(partner);
    const glob = emptyGlob(partner);
    const intentsBefore = await intentsOf(partner);

    const first = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob) });
    expect(first).to.have.length(1);
    const [run] = first;
    expect(run).to.deep.include({
      partner,
      source: `no report (no file matches ${glob})`,
      noReport: true,
      status: 'succeeded',
      checksum: null,
      rowsRead: 0,
      rowsRejected: 0,
      matched: 0,
      ambiguous: 0,
      resolved: { completed: 0, notExecuted: 0 },
      corrected: 0,
      discrepancies: { ...noDiscrepancies(), unresolved: 2 },
      coverage: null,
      error: null,
    });
    expect(run.warnings).to.have.length(1);
    expect(run.warnings[0]).to.match(
      /^no report found: no file matches .*\*\.csv; nothing was read or proven absent: only intents whose execution an earlier run stored are completed/,
    );

    const raised = await discrepanciesOf(fx.sql, partner);
    expect(raised.map((d) => [d.kind, d.intent_id, d.dedupe_key, d.run_id])).to.deep.equal([
      ['unresolved', ids.old, `unresolved:${ids.old}:1`, run.runId],
      ['unresolved', ids.died, `unresolved:${ids.died}:1`, run.runId],
    ]);
    for (const d of raised) {
      expect(d).to.deep.include({
        attempt: 1,
        amount_at_risk: '10.00',
        currency: 'BRL',
        partner_record_ids: [],
        status: 'open',
        history: [{ to: 'open', actor: `reconciler:run-${run.runId}` }],
      });
      // Says that no report arrived; never that one was read and did not cover the intent.
      expect(d.summary).to.match(
        /past the partner's deadline, and no report arrived \(no file matches .*\)\.$/,
      );
      expect(d.summary).not.to.match(/report covers/);
      expect(d.details.intent).to.include({ intentId: d.intent_id, attempt: 1 });
    }
    expect(await intentsOf(partner), 'no intent was settled or touched').to.deep.equal(intentsBefore);

    // On record as a run, so finance and operators see when it happened and why nothing was read.
    expect(await runRow(run.runId)).to.deep.include({
      partner,
      trigger: 'manual',
      source: run.source,
      status: 'succeeded',
      checksum: null,
      coverage_from: null,
      coverage_to: null,
      rows_read: 0,
      resolved_completed: 0,
      resolved_not_executed: 0,
      discrepancies: run.discrepancies,
      warnings: run.warnings,
      error: null,
    });

    const [again] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob) });
    expect(again).to.deep.include({
      status: 'succeeded',
      noReport: true,
      discrepancies: noDiscrepancies(),
    });
    expect(again.runId).not.to.equal(run.runId);
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal(raised);
    expect(await intentsOf(partner)).to.deep.equal(intentsBefore);
  });

  it('a report arriving later raises no second unresolved for the same attempt (same dedupe key)', async () => {
    const partner = partnerName('late-file');
    const ids = await scenario(partner);
    const glob = emptyGlob(partner);
    const [none] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob) });
    expect(none.discrepancies.unresolved).to.equal(2);
    // The file that does come proves nothing about them (no coverage declared): a run with a report would
    // raise them now, and finds them raised.
    writeCsv(join(fx.dir, partner), 'late.csv', [
      {
        reference: `${partner}-done`,
        nsu: `${partner}-N1`,
        amount: '10.00',
        executedAt: minutes(now, -4 * DAY),
      },
    ]);
    const [read] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob) });
    expect(read).to.deep.include({ status: 'succeeded', noReport: false, rowsRead: 1, matched: 1 });
    expect(read.discrepancies).to.deep.equal(noDiscrepancies());
    const unresolved = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.kind === 'unresolved');
    expect(unresolved.map((d) => d.intent_id)).to.deep.equal([ids.old, ids.died]);
  });

  /**
   * Intents whose executions a report listed while their lease was still running: the run stored the rows
   * under them and left them alone (not stuck yet, so no candidate). Once stuck, any later run completes
   * each from those stored rows (collectStoredEvidence), whatever its report holds: `seen` one execution,
   * `young` one within the deadline, `twice` two executions, `off` one for 12.00 instead of 10.00; `blank`
   * has nothing on record and is past the deadline.
   */
  async function executedOnRecord(partner: string) {
    const rows = [
      { ref: 'seen', nsu: 'N1', amount: '10.00', at: -4 * DAY },
      { ref: 'young', nsu: 'N2', amount: '10.00', at: -1 * DAY },
      { ref: 'twice', nsu: 'N3', amount: '10.00', at: -4 * DAY },
      { ref: 'twice', nsu: 'N4', amount: '10.00', at: -4 * DAY + 30 },
      { ref: 'off', nsu: 'N5', amount: '12.00', at: -4 * DAY },
    ];
    const ids: Record<string, string> = {};
    for (const ref of ['seen', 'young', 'twice', 'off', 'blank']) {
      ids[ref] = await unknownIntent(fx.ledger, spec(partner, `${partner}-${ref}`));
      const startedAt = minutes(now, ref === 'young' ? -1 * DAY : -4 * DAY);
      await place(fx.sql, ids[ref], { startedAt, leaseEndedAgo: '-1 hour' });
    }
    const file = writeCsv(
      fx.dir,
      `${partner}-seen.csv`,
      rows.map((row) => ({
        reference: `${partner}-${row.ref}`,
        nsu: `${partner}-${row.nsu}`,
        amount: row.amount,
        executedAt: minutes(now, row.at),
      })),
    );
    const [read] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file) });
    expect(read).to.deep.include({
      status: 'succeeded',
      matched: 5,
      resolved: { completed: 0, notExecuted: 0 },
      discrepancies: noDiscrepancies(),
    });
    for (const ref of Object.keys(ids)) {
      await place(fx.sql, ids[ref], { startedAt: minutes(now, ref === 'young' ? -1 * DAY : -4 * DAY) });
    }
    return ids;
  }

  /** What became of `ids` and what was raised about them, without the ids and run numbers that differ. */
  async function outcomeOf(partner: string, ids: Record<string, string>) {
    const names = new Map(Object.entries(ids).map(([ref, id]) => [id, ref]));
    const intents: Record<string, unknown> = {};
    for (const [ref, id] of Object.entries(ids)) {
      const row = await intentRow(fx.sql, id);
      intents[ref] = [row.status, row.partner_reference?.replace(`${partner}-`, '') ?? null, row.resolution];
    }
    const raised = (await discrepanciesOf(fx.sql, partner)).map((d) => [
      d.kind,
      names.get(d.intent_id),
      d.amount_at_risk,
      d.partner_record_ids.length,
      d.details.executions ?? null,
    ]);
    return { intents, raised };
  }

  it('completes an intent from the executions an earlier run stored, as a run with a report does, with its duplicates and mismatches', async () => {
    // The same intents for two partners: one gets a run with a report that lists nothing of theirs, the
    // other a run without a report. Both must end the same.
    const withReport = partnerName('on-record-read');
    const without = partnerName('on-record-none');
    const readIds = await executedOnRecord(withReport);
    const noneIds = await executedOnRecord(without);
    const expected = {
      intents: {
        seen: ['completed', 'N1', 'completed'],
        young: ['completed', 'N2', 'completed'],
        twice: ['completed', 'N3', 'completed'],
        off: ['completed', 'N5', 'completed'],
        blank: ['unknown', null, null],
      },
      raised: [
        ['amount_mismatch', 'off', '2.00', 1, null],
        ['duplicate_execution', 'twice', '10.00', 2, 2],
        ['unresolved', 'blank', '10.00', 0, null],
      ],
    };

    const empty = writeCsv(fx.dir, `${withReport}-empty.csv`, []);
    const [read] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(withReport, empty) });
    expect(read).to.deep.include({
      status: 'succeeded',
      noReport: false,
      resolved: { completed: 4, notExecuted: 0 },
      discrepancies: { ...noDiscrepancies(), amount_mismatch: 1, duplicate_execution: 1, unresolved: 1 },
    });
    expect(await outcomeOf(withReport, readIds), 'what a run with a report does').to.deep.equal(expected);

    const glob = emptyGlob(without);
    const before = await snapshot(fx.sql);
    const [dry] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(without, glob), dryRun: true });
    expect(dry).to.deep.include({ status: 'dry_run', noReport: true, resolved: read.resolved });
    expect(await snapshot(fx.sql), 'a dry run rolls the completions back').to.deep.equal(before);

    const [none] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(without, glob) });
    expect(none).to.deep.include({
      status: 'succeeded',
      noReport: true,
      rowsRead: 0,
      matched: 0,
      resolved: read.resolved,
      corrected: 0,
      discrepancies: read.discrepancies,
      coverage: null,
    });
    expect(await outcomeOf(without, noneIds)).to.deep.equal(expected);
    const completed = await intentRow(fx.sql, noneIds.seen);
    expect(completed).to.deep.include({
      resolved_by: `reconciler:run-${none.runId}`,
      attempt_resolved_by: `reconciler:run-${none.runId}`,
    });
    // The rows behind the duplicate are the ones an earlier run stored; the unresolved one says no report came.
    const raised = await discrepanciesOf(fx.sql, without);
    const duplicate = raised.find((d) => d.kind === 'duplicate_execution');
    expect(duplicate.details.rows.map((r: { partnerReference: string }) => r.partnerReference)).to.deep.equal(
      [`${without}-N3`, `${without}-N4`],
    );
    expect(raised.find((d) => d.kind === 'unresolved').summary).to.match(
      /and no report arrived \(no file matches /,
    );
    expect(await runRow(none.runId)).to.deep.include({ resolved_completed: 4, resolved_not_executed: 0 });

    // Run again, it changes nothing and raises nothing new (invariant 7).
    const after = await snapshot(fx.sql);
    const [again] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(without, glob) });
    expect(again).to.deep.include({
      noReport: true,
      resolved: { completed: 0, notExecuted: 0 },
      discrepancies: noDiscrepancies(),
    });
    expect(await snapshot(fx.sql)).to.deep.equal(after);
  });

  it('leaves an intent whose stored execution it could complete alone while its lease runs again (the fence)', async () => {
    const partner = partnerName('on-record-running');
    const ids = await executedOnRecord(partner);
    // Claimed again meanwhile (partnerHonoursKey): its lease is running, so no run may settle it.
    await place(fx.sql, ids.seen, { startedAt: minutes(now, -4 * DAY), leaseEndedAgo: '-1 hour' });
    const [none] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, emptyGlob(partner)) });
    expect(none).to.deep.include({ noReport: true, resolved: { completed: 3, notExecuted: 0 } });
    expect(await intentRow(fx.sql, ids.seen)).to.deep.include({ status: 'unknown', resolution: null });
  });

  it('under amount matching too: stored executions complete their intents, nothing is proven absent', async () => {
    const partner = partnerName('on-record-amount');
    const byAmount = { match: { by: 'amount', amountTolerance: '0.01', timeWindow: '10m' } } as const;
    const id = await unknownIntent(fx.ledger, spec(partner, `${partner}-seen`));
    await place(fx.sql, id, { startedAt: minutes(now, -4 * DAY), leaseEndedAgo: '-1 hour' });
    const blank = await unknownIntent(fx.ledger, spec(partner, `${partner}-blank`, { amount: '20.00' }));
    await place(fx.sql, blank, { startedAt: minutes(now, -4 * DAY), leaseEndedAgo: '-1 hour' });
    const file = writeCsv(fx.dir, `${partner}-seen.csv`, [
      { nsu: `${partner}-N1`, amount: '10.00', executedAt: minutes(now, -4 * DAY) },
    ]);
    const [read] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, file, byAmount) });
    expect(read).to.deep.include({
      status: 'succeeded',
      matched: 1,
      resolved: { completed: 0, notExecuted: 0 },
    });
    await place(fx.sql, id, { startedAt: minutes(now, -4 * DAY) });
    await place(fx.sql, blank, { startedAt: minutes(now, -4 * DAY) });

    const [none] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, emptyGlob(partner), byAmount),
    });
    expect(none).to.deep.include({
      status: 'succeeded',
      noReport: true,
      resolved: { completed: 1, notExecuted: 0 },
      discrepancies: { ...noDiscrepancies(), unresolved: 1 },
    });
    expect(await intentRow(fx.sql, id)).to.deep.include({
      status: 'completed',
      partner_reference: `${partner}-N1`,
    });
    expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.intent_id)).to.deep.equal([blank]);
  });

  it('a dry run writes nothing: no discrepancy, no intent change, only its dry_run run row', async () => {
    const partner = partnerName('dry');
    await scenario(partner);
    const glob = emptyGlob(partner);
    const before = await snapshot(fx.sql);
    const [dry] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob), dryRun: true });
    expect(dry).to.deep.include({
      status: 'dry_run',
      noReport: true,
      discrepancies: { ...noDiscrepancies(), unresolved: 2 },
      error: null,
    });
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect(await runRow(dry.runId)).to.deep.include({ status: 'dry_run', source: dry.source });

    const [real] = await reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob) });
    expect(real.discrepancies).to.deep.equal(dry.discrepancies);
  });

  it("waits for the partner's reconciliation lock like any run, then decides on what was committed", async () => {
    const partner = partnerName('locked');
    const ids = await scenario(partner);
    const glob = emptyGlob(partner);
    const holder = await fx.sql.connect();
    try {
      await holder.query('BEGIN');
      await lockPartnerReconciliation(holder, partner);
      let finished = false;
      const started = reconcile({ pool: fx.sql, reconciler: csvReconciler(partner, glob) }).then((runs) => {
        finished = true;
        return runs;
      });
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(finished, 'the run did not wait for the lock').to.equal(false);
      expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
      // Settled by a run holding the lock: the run waiting behind it must not call it unresolved.
      await holder.query(
        `UPDATE intents SET status = 'not_executed', settled_at = now(), lease_expires_at = NULL WHERE id = $1`,
        [ids.old],
      );
      await holder.query('COMMIT');
      const [run] = await started;
      expect(run).to.deep.include({ status: 'succeeded', noReport: true });
      expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.intent_id)).to.deep.equal([ids.died]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });

  it("a fixed-width source (Cielo) whose glob matches nothing does the same, by Cielo's own deadline", async () => {
    const partner = partnerName('cielo');
    // Cielo's deadline is 5 days: 4 days stuck is not past it yet, 6 days is.
    const within = await unknownIntent(fx.ledger, spec(partner, `${partner}-within`));
    await place(fx.sql, within, { startedAt: minutes(now, -4 * DAY) });
    const id = await unknownIntent(fx.ledger, spec(partner, `${partner}-old`));
    await place(fx.sql, id, { startedAt: minutes(now, -6 * DAY) });
    mkdirSync(join(fx.dir, partner));
    const glob = join(fx.dir, partner, '*.txt');
    const config = {
      ...cielo,
      partner,
      source: { ...cielo.source, path: glob },
    } as ReconcilerConfig;
    const [run] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(run).to.deep.include({
      status: 'succeeded',
      noReport: true,
      source: `no report (no file matches ${glob})`,
      discrepancies: { ...noDiscrepancies(), unresolved: 1 },
    });
    expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.intent_id)).to.deep.equal([id]);
  });

  it('a --file that does not exist stays a failed run: nothing raised, no run without a report', async () => {
    const partner = partnerName('missing-file');
    await scenario(partner);
    const before = await snapshot(fx.sql);
    const file = join(fx.dir, `${partner}-missing.csv`);
    const runs = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, emptyGlob(partner)),
      file,
    });
    expect(runs).to.have.length(1);
    expect(runs[0]).to.deep.include({ status: 'failed', noReport: false, source: file });
    expect(runs[0].error).to.match(/ENOENT/);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });

  describe('the scheduled worker', () => {
    it('elects one run per slot, raises unresolved, and logs the run without a report (no personal data)', async () => {
      const partner = partnerName('worker');
      const ids = await scenario(partner);
      const config = csvReconciler(partner, emptyGlob(partner), { schedule: '0 0 1 1 *' });
      const pools = [0, 1].map(() => new Pool({ connectionString: fx.db.url, max: 2 }));
      const entries: { level: string; object: object; message: string }[] = [];
      const workers = pools.map(
        (pool, i) =>
          new ReconciliationWorker({
            pool,
            reconcilers: [config],
            logger: capturingLogger(entries),
            owner: `w${i}`,
          }),
      );
      const slot = new Date('2026-11-29T12:00:00Z');
      try {
        await Promise.all(workers.map((worker) => worker.fire(config, slot)));
      } finally {
        await Promise.all(workers.map((worker) => worker.stop()));
        await Promise.all(pools.map((pool) => pool.end()));
      }
      const runs = await fx.sql.query('SELECT * FROM reconciliation_runs WHERE partner = $1', [partner]);
      expect(runs.rows).to.have.length(1);
      expect(runs.rows[0]).to.deep.include({ trigger: 'schedule', status: 'succeeded', rows_read: 0 });
      expect(runs.rows[0].source).to.match(/^no report \(no file matches /);
      expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.intent_id)).to.deep.equal([
        ids.old,
        ids.died,
      ]);

      const logged = entries.filter(
        (e) =>
          e.message ===
          'reconciliation run without a report: no file matched, decided only from what is on record',
      );
      expect(logged).to.have.length(1);
      expect(logged[0].level).to.equal('warn');
      expect(logged[0].object).to.deep.include({
        partner,
        runId: runs.rows[0].id,
        status: 'succeeded',
        noReport: true,
        unresolved: 2,
        source: runs.rows[0].source,
      });
      expect(entries.filter((e) => e.message === 'slot taken by another worker')).to.have.length(1);
      const everything = JSON.stringify(entries);
      for (const personal of [`${partner}-old`, `${partner}-died`, '10.00'])
        expect(everything, 'a log line carries intent data').not.to.include(personal);
    });
  });

  describe('through the CLI (intent-ledger reconcile <partner>)', () => {
    /** A reconcilers dir holding `partner`'s reconciler, its source a glob that matches nothing. */
    function reconcilersFor(partner: string): string {
      const dir = join(fx.dir, `${partner}-reconcilers`);
      mkdirSync(dir);
      const config = csvReconciler(partner, emptyGlob(partner));
      writeFileSync(join(dir, `${partner}.js`), `module.exports = ${JSON.stringify(config, null, 2)};\n`);
      return dir;
    }

    it('--json says noReport and counts the unresolved; the text says no report was found and how many', async () => {
      const partner = partnerName('cli');
      await scenario(partner);
      const dir = reconcilersFor(partner);
      const env = { DATABASE_URL: fx.db.url, LOG_LEVEL: 'error' };
      const json = await runCli(['reconcile', partner, '--json', '--reconcilers', dir], env);
      expect(json.code, json.stderr).to.equal(0);
      const out = JSON.parse(json.stdout);
      expect(out).to.deep.include({
        partner,
        noReport: true,
        status: 'succeeded',
        rowsRead: 0,
        discrepancies: { ...noDiscrepancies(), unresolved: 2 },
      });
      expect(out.source).to.match(/^no report \(no file matches .*\*\.csv\)$/);

      const text = await runCli(['reconcile', partner, '--reconcilers', dir], env);
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.match(
        new RegExp(`^run \\d+ ${partner} succeeded: no report \\(no file matches `),
      );
      expect(text.stdout).to.include(
        "no report found: nothing read or proven absent; completed 0 from executions already on record; new discrepancies: unresolved 0 (intents stuck past the partner's deadline)",
      );
    });

    it('the text counts the intents completed from executions on record, and what those records showed', async () => {
      const partner = partnerName('cli-on-record');
      await executedOnRecord(partner);
      const dir = reconcilersFor(partner);
      const text = await runCli(['reconcile', partner, '--reconcilers', dir], {
        DATABASE_URL: fx.db.url,
        LOG_LEVEL: 'error',
      });
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout).to.include(
        "no report found: nothing read or proven absent; completed 4 from executions already on record; new discrepancies: unresolved 1 (intents stuck past the partner's deadline), duplicate_execution 1, amount_mismatch 1",
      );
    });
  });
});
