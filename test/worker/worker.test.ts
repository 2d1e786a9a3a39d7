import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Pool } from 'pg';
import acmePay from '../../reconcilers/acme-pay.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { ReconciliationWorker } from '../../src/reconcile/reconciliationWorker.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger } from '../support/testLedger.js';

const CLI = join(__dirname, '../../src/cli/main.js');

/** A tiny report in the acme-pay dialect, and a reconciler for it that fires every second. */
function writeFixture(): { dir: string; reconcilersDir: string; report: string } {
  const dir = mkdtempSync(join(tmpdir(), 'il-worker-'));
  const report = join(dir, 'report.csv');
  writeFileSync(
    report,
    Buffer.from('PEDIDO;NSU;VALOR;MOEDA;DATA\r\norder-1;N1;1,00;BRL;28/11/2026 10:00:00\r\n', 'latin1'),
  );
  const reconcilersDir = join(dir, 'reconcilers');
  mkdirSync(reconcilersDir);
  writeFileSync(
    join(reconcilersDir, 'acme-pay.js'),
    `module.exports = ${JSON.stringify(reconciler(report, '* * * * * *'), null, 2)};\n`,
  );
  return { dir, reconcilersDir, report };
}

/** The shipped acme-pay reconciler, pointed at one file and a test schedule. */
function reconciler(path: string, schedule: string): ReconcilerConfig {
  return { ...acmePay, schedule, source: { ...acmePay.source, path } as ReconcilerConfig['source'] };
}

describe('reconciliation worker: one run per partner per slot, across processes', () => {
  const db = useFreshDatabase('worker');
  let sql: Pool;
  before(() => {
    sql = new Pool({ connectionString: db.url, max: 4 });
  });
  after(() => sql.end());

  it('elects exactly one of many workers firing the same slot, in one process or many pools', async () => {
    const { report } = writeFixture();
    const pools = Array.from({ length: 4 }, () => new Pool({ connectionString: db.url, max: 2 }));
    const config = reconciler(report, '0 0 1 1 *');
    const workers = pools.map(
      (pool, i) =>
        new ReconciliationWorker({ pool, reconcilers: [config], logger: capturingLogger(), owner: `w${i}` }),
    );
    const slot = new Date('2026-11-29T12:00:00Z');
    try {
      await Promise.all(workers.flatMap((worker) => [worker.fire(config, slot), worker.fire(config, slot)]));
      const runs = await sql.query(`SELECT trigger, status, owner FROM reconciliation_runs WHERE slot = $1`, [
        slot,
      ]);
      expect(runs.rows).to.have.length(1);
      expect(runs.rows[0]).to.include({ trigger: 'schedule', status: 'succeeded' });
      expect(runs.rows[0].owner).to.be.oneOf(['w0', 'w1', 'w2', 'w3']);
      const all = await sql.query('SELECT count(*)::int AS n FROM reconciliation_runs');
      expect(all.rows[0].n).to.equal(1);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('two worker processes on a per-second schedule run each slot once and stop cleanly on SIGTERM', async function () {
    this.timeout(30_000);
    const { reconcilersDir } = writeFixture();
    const env = { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'debug' };
    const workers: ChildProcess[] = [0, 1].map(() =>
      spawn(process.execPath, [CLI, 'worker', '--reconcilers', reconcilersDir], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    const output: string[] = [];
    for (const worker of workers) {
      worker.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
      worker.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    }
    await waitFor(async () => {
      const n = await sql.query<{ n: string }>(
        `SELECT count(*) AS n FROM reconciliation_runs WHERE trigger = 'schedule'`,
      );
      return Number(n.rows[0].n) >= 4;
    }, 20_000);
    const exits = workers.map(
      (worker) => new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code))),
    );
    for (const worker of workers) worker.kill('SIGTERM');
    const codes = await Promise.all(exits);
    expect(codes, output.join('')).to.deep.equal([0, 0]);

    const perSlot = await sql.query<{ slot: Date; runs: number; owners: string[] }>(
      `SELECT slot, count(*)::int AS runs, array_agg(owner) AS owners FROM reconciliation_runs
        WHERE trigger = 'schedule' GROUP BY slot ORDER BY slot`,
    );
    expect(perSlot.rows.length).to.be.at.least(4);
    expect(
      perSlot.rows.filter((row) => row.runs !== 1),
      'a slot ran twice',
    ).to.deep.equal([]);
    // Both processes fired every slot; the losers saw the slot taken. Without that, the test would prove
    // nothing about the election.
    const log = output.join('');
    const taken = log.split('\n').filter((line) => line.includes('slot taken by another worker')).length;
    expect(taken, log).to.be.at.least(perSlot.rows.length - 2);
    const unfinished = await sql.query(`SELECT id FROM reconciliation_runs WHERE status = 'running'`);
    expect(unfinished.rows, 'a run was left half-done').to.deep.equal([]);
  });
});

describe('reconciliation worker: how many runs at once', () => {
  const db = useFreshDatabase('worker-limit');
  let sql: Pool;
  before(() => {
    sql = new Pool({ connectionString: db.url, max: 2 });
  });
  after(() => sql.end());

  /**
   * The most runs in flight at once, from the order of the runs' own log lines: every run logs when it has
   * started (its run row committed) and when it has finished.
   */
  function mostInFlight(entries: { object: object; message: string }[]): number {
    // Each run logs "finished" twice (the run, then the worker), so runs are told apart by their id.
    const inFlight = new Set<string>();
    let most = 0;
    for (const { object, message } of entries) {
      const runId = (object as { runId?: string }).runId;
      if (runId === undefined) continue;
      if (message === 'reconciliation run started') inFlight.add(runId);
      else if (message === 'reconciliation run finished') inFlight.delete(runId);
      most = Math.max(most, inFlight.size);
    }
    return most;
  }

  it('runs at most maxConcurrentRuns slots at once (by default half its pool), the others after, each once', async () => {
    const { report } = writeFixture();
    const configs = ['p1', 'p2', 'p3', 'p4'].map((partner) => ({
      ...reconciler(report, '0 0 1 1 *'),
      partner,
    }));
    const slot = new Date('2026-11-29T13:00:00Z');
    const cases: { label: string; poolMax: number; maxConcurrentRuns?: number; most: number }[] = [
      { label: 'default, pool of 2', poolMax: 2, most: 1 },
      { label: 'default, pool of 4', poolMax: 4, most: 2 },
      { label: 'explicit 1, pool of 6', poolMax: 6, maxConcurrentRuns: 1, most: 1 },
    ];
    for (const [i, c] of cases.entries()) {
      const pool = new Pool({ connectionString: db.url, max: c.poolMax });
      const entries: { level: string; object: object; message: string }[] = [];
      const worker = new ReconciliationWorker({
        pool,
        reconcilers: configs,
        logger: capturingLogger(entries),
        owner: `limit-${i}`,
        maxConcurrentRuns: c.maxConcurrentRuns,
      });
      const caseSlot = new Date(slot.getTime() + i * 60_000);
      try {
        await Promise.all(configs.map((config) => worker.fire(config, caseSlot)));
        expect(mostInFlight(entries), c.label).to.equal(c.most);
        const runs = await sql.query<{ partner: string; status: string }>(
          'SELECT partner, status FROM reconciliation_runs WHERE slot = $1 ORDER BY partner',
          [caseSlot],
        );
        expect(runs.rows, c.label).to.deep.equal(
          configs.map((config) => ({ partner: config.partner, status: 'succeeded' })),
        );
      } finally {
        await worker.stop();
        await pool.end();
      }
    }
  });

  it('without a limit below the number of slots, the same four slots do run at once (the check above can fail)', async () => {
    const { report } = writeFixture();
    const configs = ['q1', 'q2', 'q3', 'q4'].map((partner) => ({
      ...reconciler(report, '0 0 1 1 *'),
      partner,
    }));
    const pool = new Pool({ connectionString: db.url, max: 10 });
    const entries: { level: string; object: object; message: string }[] = [];
    const worker = new ReconciliationWorker({
      pool,
      reconcilers: configs,
      logger: capturingLogger(entries),
      owner: 'no-limit',
      maxConcurrentRuns: 4,
    });
    try {
      await Promise.all(configs.map((config) => worker.fire(config, new Date('2026-11-29T14:00:00Z'))));
      expect(mostInFlight(entries)).to.be.at.least(2);
    } finally {
      await worker.stop();
      await pool.end();
    }
  });

  it('stop() while slots wait their turn: the running one finishes, the waiting ones never start', async () => {
    const { report } = writeFixture();
    const configs = ['s1', 's2', 's3'].map((partner) => ({ ...reconciler(report, '0 0 1 1 *'), partner }));
    const pool = new Pool({ connectionString: db.url, max: 2 });
    const entries: { level: string; object: object; message: string }[] = [];
    const worker = new ReconciliationWorker({
      pool,
      reconcilers: configs,
      logger: capturingLogger(entries),
      owner: 'stopping',
      maxConcurrentRuns: 1,
    });
    const slot = new Date('2026-11-29T15:00:00Z');
    try {
      const fired = configs.map((config) => worker.fire(config, slot));
      await worker.stop();
      await Promise.all(fired);
      const runs = await sql.query<{ partner: string; status: string }>(
        'SELECT partner, status FROM reconciliation_runs WHERE slot = $1',
        [slot],
      );
      expect(runs.rows).to.deep.equal([{ partner: 's1', status: 'succeeded' }]);
      const notStarted = entries.filter((e) => e.message === 'worker stopping: slot not started');
      expect(notStarted.map((e) => (e.object as { partner: string }).partner)).to.deep.equal(['s2', 's3']);
    } finally {
      await pool.end();
    }
  });

  it('refuses a limit that is not a positive integer', () => {
    const pool = new Pool({ connectionString: db.url, max: 2 });
    try {
      for (const bad of [0, -1, 1.5, Number.NaN])
        expect(
          () =>
            new ReconciliationWorker({
              pool,
              reconcilers: [],
              logger: capturingLogger(),
              maxConcurrentRuns: bad,
            }),
        ).to.throw(RangeError, /positive integer/);
    } finally {
      void pool.end();
    }
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
