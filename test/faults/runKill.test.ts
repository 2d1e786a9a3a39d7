import { join } from 'node:path';
import { expect } from 'chai';
import type { PoolClient } from 'pg';
import { raiseDiscrepancy } from '../../src/discrepancies/sql/raiseDiscrepancy.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { ReconciliationWorker } from '../../src/reconcile/reconciliationWorker.js';
import { abandonStaleRuns } from '../../src/reconcile/sql/abandonStaleRuns.js';
import { lockPartnerReconciliation } from '../../src/reconcile/sql/lockPartnerReconciliation.js';
import {
  type CsvRow,
  csvReconciler,
  dbNow,
  intentRow,
  minutes,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from '../reconcile/support.js';
import { type EventWorker, startEventWorker } from '../support/eventWorker.js';
import { delay } from '../support/fixtures.js';
import { capturingLogger } from '../support/testLedger.js';
import type { RunKillEvent, RunKillInput } from './runKillWorker.js';

/** Short enough for a quick suite, far above a heartbeat every 100 ms even on a loaded machine. */
const HEARTBEAT_MS = 100;
const ABANDON_AFTER_MS = 2_000;
/** 12,000 rows: three staged batches of at most 5,000, so the kills below land between batches. */
const ROWS = 12_000;

/**
 * Issue 16, case 7: a reconciliation run whose process is SIGKILLed is closed as `abandoned` by the next run
 * (or the worker's next tick) once its heartbeat is stale, and nothing it did was applied; a live run with a
 * fresh heartbeat is never closed by another process. Before migration 0008 and src/reconcile/runHeartbeat.ts
 * every killed run below stayed `running` forever: on that code the "abandoned" expectations fail (and this
 * file does not even compile, abandonStaleRuns and the heartbeat options being new).
 */
describe('faults: reconciliation runs killed by SIGKILL are closed as abandoned, nothing applied', function () {
  this.timeout(180_000);
  const fx = useReconcileFixture('run_kill');
  let partner: string;
  let reconciler: ReconcilerConfig;
  let found: string;

  before(async () => {
    partner = partnerName('killed');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    found = await unknownIntent(fx.ledger, spec(partner, `${partner}-found`));
    await place(fx.sql, found, { startedAt: minutes(base, 60) });
    const rows: CsvRow[] = [
      { reference: `${partner}-found`, nsu: `${partner}-N0`, amount: '10.00', executedAt: minutes(base, 61) },
    ];
    for (let i = 1; i < ROWS; i++) {
      rows.push({
        reference: `stranger-${i}`,
        nsu: `${partner}-N${i}`,
        amount: '5.00',
        executedAt: minutes(base, i % 400),
      });
    }
    reconciler = csvReconciler(partner, writeCsv(fx.dir, `${partner}.csv`, rows));
  });

  function startRun(pauseAt: string[]) {
    const input: RunKillInput = {
      databaseUrl: fx.db.url,
      reconciler,
      heartbeatMs: HEARTBEAT_MS,
      abandonAfterMs: ABANDON_AFTER_MS,
      pauseAt,
    };
    return startEventWorker<RunKillEvent>(join(__dirname, 'runKillWorker.js'), input, {
      name: 'run-kill worker',
      defaultTimeoutMs: 30_000,
    });
  }

  /** The first event named `name` (the worker's events are not a closed union of names). */
  function step(worker: EventWorker<RunKillEvent>, name: string): Promise<RunKillEvent> {
    return worker.next(name);
  }

  /** Holds this partner's reconciliation lock (as a deciding run would) until the returned release. */
  async function holdPartnerLock(): Promise<() => Promise<void>> {
    const client: PoolClient = await fx.sql.connect();
    await client.query('BEGIN');
    await lockPartnerReconciliation(client, partner);
    return async () => {
      await client.query('ROLLBACK');
      client.release();
    };
  }

  async function runRow(runId: string) {
    const { rows } = await fx.sql.query(
      `SELECT status, error, finished_at, heartbeat_at, now() - heartbeat_at AS heartbeat_age
         FROM reconciliation_runs WHERE id = $1`,
      [runId],
    );
    return rows[0];
  }

  async function appliedBy(runId: string): Promise<number> {
    const { rows } = await fx.sql.query(
      `SELECT (SELECT count(*) FROM partner_records WHERE run_id = $1)
            + (SELECT count(*) FROM discrepancies WHERE run_id = $1)
            + (SELECT count(*) FROM intents WHERE resolved_by = 'reconciler:run-' || $1) AS n`,
      [runId],
    );
    return Number(rows[0].n);
  }

  function dryRun(): Promise<ReconciliationResult[]> {
    return reconcile({
      pool: fx.sql,
      reconciler,
      dryRun: true,
      heartbeatMs: HEARTBEAT_MS,
      abandonAfterMs: ABANDON_AFTER_MS,
      logger: capturingLogger(),
    });
  }

  // Each kill lands at another moment of the run; the partner lock is held throughout, so none of them
  // can have got as far as deciding, let alone committing.
  const KILLS: { at: string; why: string }[] = [
    { at: 'reading#1', why: 'run row written, heartbeat started, nothing read yet' },
    { at: 'reading#2', why: 'in its transaction, after the first staged batch' },
    { at: 'reading#3', why: 'in its transaction, after the second staged batch' },
    { at: 'deciding', why: 'the whole report staged, about to decide' },
    { at: 'waiting', why: 'alive and heartbeating for a while, waiting for the partner lock' },
  ];
  const deadRuns: string[] = [];

  for (const [index, kill] of KILLS.entries()) {
    it(`kill ${index + 1} (${kill.at}: ${kill.why}): stays running while its heartbeat is fresh, then abandoned`, async () => {
      const before = await snapshot(fx.sql);
      const release = await holdPartnerLock();
      let runId: string;
      try {
        const worker = startRun(kill.at === 'waiting' ? [] : [kill.at]);
        try {
          if (kill.at === 'waiting') {
            runId = (await step(worker, 'deciding')).runId as string;
            // Blocked on the lock, alive: its heartbeat keeps moving.
            const first = (await runRow(runId)).heartbeat_at as Date;
            await delay(10 * HEARTBEAT_MS);
            expect(((await runRow(runId)).heartbeat_at as Date).getTime()).to.be.above(first.getTime());
          } else {
            runId = (await step(worker, kill.at)).runId as string;
          }
        } finally {
          expect(await worker.kill()).to.equal('SIGKILL');
        }
        deadRuns.push(runId);
        expect(await runRow(runId)).to.deep.include({ status: 'running', error: null, finished_at: null });
      } finally {
        await release();
      }

      // Looked at right away (the statement every run starts with), the dead run's heartbeat is younger
      // than the threshold, so it stays.
      expect(await abandonStaleRuns(fx.sql, partner, ABANDON_AFTER_MS)).to.deep.equal([]);
      const fresh = await runRow(runId);
      expect(fresh.status, `heartbeat age ${JSON.stringify(fresh.heartbeat_age)}`).to.equal('running');

      // Once it is stale, the next run (a dry run here, so the file can be used again) closes it.
      await delay(ABANDON_AFTER_MS + 200);
      const [next] = await dryRun();
      expect(next.status).to.equal('dry_run');
      const closed = await runRow(runId);
      expect(closed.status).to.equal('abandoned');
      expect(closed.finished_at).to.be.instanceOf(Date);
      expect(closed.error).to.match(
        /^abandoned: no heartbeat since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(more than 2 s ago\); the process running it died or lost the database before committing, so nothing it did was applied$/,
      );
      expect(await appliedBy(runId)).to.equal(0);
      expect(await snapshot(fx.sql)).to.deep.equal(before);
      expect((await intentRow(fx.sql, found)).status).to.equal('unknown');
    });
  }

  it('a live run whose row another process closed as abandoned rolls back instead of committing', async () => {
    const before = await snapshot(fx.sql);
    const release = await holdPartnerLock();
    const worker = startRun([]);
    let runId: string;
    try {
      runId = (await step(worker, 'deciding')).runId as string;
      // As if the run had stalled past the threshold: its heartbeat made old and the row closed in one
      // transaction, so no refresh can come in between.
      const client = await fx.sql.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          `UPDATE reconciliation_runs SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`,
          [runId],
        );
        expect(await abandonStaleRuns(client, partner, ABANDON_AFTER_MS)).to.deep.equal([runId]);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    } finally {
      await release();
    }
    const done = await step(worker, 'done');
    expect(done.status).to.equal('abandoned');
    expect(done.error).to.match(/^abandoned: another process closed this run/);
    expect(await appliedBy(runId)).to.equal(0);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    await worker.kill();
  });
  it('a live run with a fresh heartbeat is never closed by another process, however long it takes', async () => {
    const release = await holdPartnerLock();
    const worker = startRun([]);
    let runId: string;
    try {
      runId = (await step(worker, 'deciding')).runId as string;
      // Other processes look for stale runs for twice the threshold while this one waits for the lock.
      const until = Date.now() + 2 * ABANDON_AFTER_MS;
      while (Date.now() < until) {
        expect(await abandonStaleRuns(fx.sql, partner, ABANDON_AFTER_MS)).to.deep.equal([]);
        await delay(100);
      }
      expect((await runRow(runId)).status).to.equal('running');
    } finally {
      await release();
    }
    const done = await step(worker, 'done');
    expect(done).to.deep.include({ runId, status: 'succeeded', error: null });
    expect((await runRow(runId)).status).to.equal('succeeded');
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    await worker.kill();
  });

  it('the worker closes a killed run on its next tick (whichever worker wins the slot), then runs', async () => {
    const worker = startRun(['reading#2']);
    const runId = (await step(worker, 'reading#2')).runId as string;
    await worker.kill();
    expect((await runRow(runId)).status).to.equal('running');
    await delay(ABANDON_AFTER_MS + 200);
    const reconciliation = new ReconciliationWorker({
      pool: fx.sql,
      reconcilers: [reconciler],
      logger: capturingLogger(),
      heartbeatMs: HEARTBEAT_MS,
      abandonAfterMs: ABANDON_AFTER_MS,
    });
    try {
      await reconciliation.fire(reconciler, new Date());
    } finally {
      await reconciliation.stop();
    }
    expect((await runRow(runId)).status).to.equal('abandoned');
    expect(await appliedBy(runId)).to.equal(0);
    const { rows } = await fx.sql.query(
      `SELECT status FROM reconciliation_runs WHERE partner = $1 AND trigger = 'schedule'`,
      [partner],
    );
    expect(rows).to.deep.equal([{ status: 'succeeded' }]);
    // Every run killed in this suite ended abandoned; none is left running.
    const running = await fx.sql.query(
      `SELECT id FROM reconciliation_runs WHERE partner = $1 AND status = 'running'`,
      [partner],
    );
    expect(running.rows).to.deep.equal([]);
    expect(deadRuns).to.have.length(KILLS.length);
  });

  it('runs left running from before migration 0008 (no heartbeat) are closed too, saying whether they committed', async () => {
    const legacy = partnerName('legacy');
    const insert = async (source: string) =>
      (
        await fx.sql.query<{ id: string }>(
          `INSERT INTO reconciliation_runs (partner, trigger, source, status, started_at)
           VALUES ($1, 'manual', $2, 'running', now() - interval '1 hour') RETURNING id`,
          [legacy, source],
        )
      ).rows[0].id;
    const silent = await insert('died-before-commit.csv');
    const committed = await insert('died-after-commit.csv');
    // The old code committed, then died before closing its row: what it raised carries its id.
    await raiseDiscrepancy(fx.sql, {
      kind: 'orphan_partner_record',
      partner: legacy,
      intentId: null,
      attempt: null,
      runId: committed,
      reference: null,
      partnerReference: 'NSU-legacy',
      amountAtRisk: '1.00',
      currency: 'BRL',
      summary: 'raised by a run from before 0008',
      details: {},
      dedupeKey: `${legacy}-1`,
      actor: 'reconciler',
    });
    const closed = await abandonStaleRuns(fx.sql, legacy, ABANDON_AFTER_MS);
    expect([...closed].sort()).to.deep.equal([silent, committed].sort());
    expect((await runRow(silent)).error).to.match(
      /^abandoned: no heartbeat since .* nothing it did was applied$/,
    );
    expect((await runRow(committed)).error).to.equal(
      'abandoned: started before migration 0008 and never closed, but its changes were committed ' +
        '(partner rows or discrepancies carry its id); its counts were not recorded',
    );
  });
});
