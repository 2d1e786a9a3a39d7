/**
 * Crash points: a worker in a child process (test/faults/crashPointWorker.ts) calls the loopback partner
 * (src/partnerFake, run here in the parent) through `ledger.run()` and is killed with SIGKILL at each point
 * of the flow. Each point is engineered, never timed:
 *
 * a. before the claim commits: the parent holds an uncommitted row for the same (partner, key), so the
 *    worker's claim statement waits inside PostgreSQL on it (seen in pg_stat_activity) when the kill lands;
 *    - `a-aborted`: the worker's session has `client_connection_check_interval`, PostgreSQL notices the
 *      dead client and aborts the claim (no intent at all);
 *    - `a-committed`: PostgreSQL's default; the claim commits after the worker is dead (an orphan claim);
 * b. after the claim, before the call: the worker stops at `claimed` until told to go, and never is;
 * c. during the call, the partner not having executed yet: the partner's fault hook kills the worker when
 *    the request reaches it, before executing; then it drops the request (`c-dropped`) or executes it
 *    anyway, for a client that is gone (`c-executed`);
 * d. after the partner executed, before completion is recorded: the worker holds the partner's answer;
 * e. during completion: the parent holds the intent row FOR UPDATE, so the completion UPDATE waits inside
 *    PostgreSQL when the kill lands; aborted by the server (`e-aborted`) or committed after death
 *    (`e-committed`), as for point a.
 *
 * Then, as production would: every key is redelivered once the leases have ended, the partner's settlement
 * file (acme-pay dialect) is written from what it executed and reconciled, and every key is redelivered
 * again. The figures table is printed at the end (docs/RELIABILITY.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Pool, PoolClient } from 'pg';
import acmePay from '../../reconcilers/acme-pay.js';
import { writeSettlementFile } from '../../src/demo/writeSettlementFile.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { IntentOutcomeUnknownError } from '../../src/shared/errors/index.js';
import type { IntentSpec, PartnerCall, RunResult } from '../../src/shared/types.js';
import {
  type Deferred,
  deferred,
  type Settled,
  settle,
  specFactory,
  sqlPool,
  waitFor,
} from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';
import { CRASH_KEY_HEADER, type CrashPointWorker, startCrashPointWorker } from './crashPointProcess.js';
import type { CrashStep } from './crashPointWorker.js';

/** Runs (keys, child processes) per variant; points a, c and e have two variants each. */
const RUNS: Record<Variant, number> = {
  'a-aborted': perVariant(10),
  'a-committed': perVariant(10),
  b: perVariant(20),
  'c-dropped': perVariant(10),
  'c-executed': perVariant(10),
  d: perVariant(20),
  'e-aborted': perVariant(10),
  'e-committed': perVariant(10),
};
/** Child processes alive at once (each loads the ledger: about 0.5 s of CPU). */
const CONCURRENCY = Number(process.env.CRASH_CONCURRENCY ?? 6);
/** Long enough that no kill lands after the worker's own abort timer (lease - 10%). */
const CHILD_LEASE_MS = 5_000;

/** `CRASH_RUNS_SCALE=0.5` halves every count (a quick run); 2 doubles them. */
function perVariant(n: number): number {
  return Math.max(1, Math.round(n * Number(process.env.CRASH_RUNS_SCALE ?? 1)));
}

type Point = 'a' | 'b' | 'c' | 'd' | 'e';
type Variant =
  | 'a-aborted'
  | 'a-committed'
  | 'b'
  | 'c-dropped'
  | 'c-executed'
  | 'd'
  | 'e-aborted'
  | 'e-committed';

interface Expected {
  point: Point;
  label: string;
  stops: CrashStep[];
  serverChecksClient: boolean;
  /** Events the worker printed before dying. */
  events: string[];
  /** Right after the kill: the intent's status (null: none) and how often the partner executed. */
  afterKill: { status: string | null; executions: number };
  /** What the first redelivery (leases ended) gets. */
  redelivery1: 'called' | 'unknown' | 'replayed';
  /** What the reconciler settles the intent as (null: nothing to settle). */
  reconciled: 'completed' | 'not_executed' | null;
  /** What the redelivery after reconciliation gets. */
  redelivery2: 'called' | 'replayed';
  /** The attempt the intent finally completed with. */
  finalAttempt: number;
}

const EXPECTED: Record<Variant, Expected> = {
  'a-aborted': {
    point: 'a',
    label: 'a. claim in flight, aborted by PostgreSQL',
    stops: [],
    serverChecksClient: true,
    events: ['ready'],
    afterKill: { status: null, executions: 0 },
    redelivery1: 'called',
    reconciled: null,
    redelivery2: 'replayed',
    finalAttempt: 1,
  },
  'a-committed': {
    point: 'a',
    label: 'a. claim in flight, committed after death',
    stops: [],
    serverChecksClient: false,
    events: ['ready'],
    afterKill: { status: 'in_progress', executions: 0 },
    redelivery1: 'unknown',
    reconciled: 'not_executed',
    redelivery2: 'called',
    finalAttempt: 2,
  },
  b: {
    point: 'b',
    label: 'b. claimed, before the call',
    stops: ['claimed'],
    serverChecksClient: false,
    events: ['ready', 'claimed'],
    afterKill: { status: 'in_progress', executions: 0 },
    redelivery1: 'unknown',
    reconciled: 'not_executed',
    redelivery2: 'called',
    finalAttempt: 2,
  },
  'c-dropped': {
    point: 'c',
    label: 'c. in the call, partner drops it',
    stops: [],
    serverChecksClient: false,
    events: ['ready', 'claimed', 'calling'],
    afterKill: { status: 'in_progress', executions: 0 },
    redelivery1: 'unknown',
    reconciled: 'not_executed',
    redelivery2: 'called',
    finalAttempt: 2,
  },
  'c-executed': {
    point: 'c',
    label: 'c. in the call, partner executes after death',
    stops: [],
    serverChecksClient: false,
    events: ['ready', 'claimed', 'calling'],
    afterKill: { status: 'in_progress', executions: 1 },
    redelivery1: 'unknown',
    reconciled: 'completed',
    redelivery2: 'replayed',
    finalAttempt: 1,
  },
  d: {
    point: 'd',
    label: 'd. partner executed, answer in hand',
    stops: ['answered'],
    serverChecksClient: false,
    events: ['ready', 'claimed', 'calling', 'answered'],
    afterKill: { status: 'in_progress', executions: 1 },
    redelivery1: 'unknown',
    reconciled: 'completed',
    redelivery2: 'replayed',
    finalAttempt: 1,
  },
  'e-aborted': {
    point: 'e',
    label: 'e. completion in flight, aborted by PostgreSQL',
    stops: ['answered'],
    serverChecksClient: true,
    events: ['ready', 'claimed', 'calling', 'answered'],
    afterKill: { status: 'in_progress', executions: 1 },
    redelivery1: 'unknown',
    reconciled: 'completed',
    redelivery2: 'replayed',
    finalAttempt: 1,
  },
  'e-committed': {
    point: 'e',
    label: 'e. completion in flight, committed after death',
    stops: ['answered'],
    serverChecksClient: false,
    events: ['ready', 'claimed', 'calling', 'answered'],
    afterKill: { status: 'completed', executions: 1 },
    redelivery1: 'replayed',
    reconciled: null,
    redelivery2: 'replayed',
    finalAttempt: 1,
  },
};
const VARIANTS = Object.keys(EXPECTED) as Variant[];

/** What the ledger and the partner hold for one key at some moment. */
interface Observed {
  status: string | null;
  attempt: number | null;
  owner: string | null;
  resolvedBy: string | null;
  partnerReference: string | null;
  executions: number;
}

interface Run {
  variant: Variant;
  spec: IntentSpec;
  owner: string;
  worker?: CrashPointWorker;
  /** Resolved by the partner's fault hook when it holds this run's request (point c). */
  heldAtPartner: Deferred<void>;
  events: string[];
  killedBy: NodeJS.Signals | null;
  afterKill?: Observed;
  redelivery1?: Settled<RunResult>;
  calls1: number;
  reconciled?: Observed;
  redelivery2?: Settled<RunResult>;
  calls2: number;
  final?: Observed;
}

const spec = specFactory('crashpt');

describe('faults: crash points (worker processes killed with SIGKILL at each point of the flow)', function () {
  this.timeout(300_000);
  const db = useFreshDatabase('crash_points');
  let fake: FakePartner;
  let ledger: Ledger;
  let sql: Pool;
  let dir: string;
  let coverageFrom: Date;
  const runs: Run[] = [];
  const heldAtPartner = new Map<string, Run>();
  const reports: ReconciliationResult[] = [];
  const timings: Record<string, number> = {};

  before(async () => {
    fake = await startFakePartner({ idPrefix: 'nsu_' });
    sql = sqlPool(db.url, 2 * CONCURRENCY + 2);
    ledger = await testLedger(db.url, { owner: 'redeliverer' });
    dir = mkdtempSync(join(tmpdir(), 'crash-points-'));
    coverageFrom = new Date((await dbNow()).getTime() - 1_000);
    // Point c: the partner has the request and has not executed it. Kill the worker right here (the signal is
    // sent before this returns), then drop the request or execute it for a client that is gone.
    fake.setFault((request) => {
      const key = request.headers[CRASH_KEY_HEADER];
      const run = request.method === 'POST' && typeof key === 'string' ? heldAtPartner.get(key) : undefined;
      if (!run) return undefined;
      heldAtPartner.delete(key as string);
      run.worker?.killNow();
      run.heldAtPartner.resolve();
      return run.variant === 'c-executed' ? { kind: 'hang' } : { kind: 'reset-before' };
    });
    for (const variant of VARIANTS) {
      for (let i = 0; i < RUNS[variant]; i++) {
        runs.push({
          variant,
          spec: spec(),
          owner: `doomed-${variant}-${i}`,
          heldAtPartner: deferred(),
          events: [],
          killedBy: null,
          calls1: 0,
          calls2: 0,
        });
      }
    }
  });

  after(async () => {
    await Promise.all(runs.map((run) => run.worker?.kill()));
    await fake?.close();
    await ledger?.close();
    await sql?.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function dbNow(): Promise<Date> {
    return (await sql.query<{ now: Date }>('SELECT now() AS now')).rows[0].now;
  }

  /** The backend `pid` waits on a lock inside a statement matching `statement`. */
  async function waitForLockWait(pid: number, statement: RegExp): Promise<void> {
    await waitFor(
      `backend ${pid} to wait on a lock in ${statement}`,
      async () => {
        const { rows } = await sql.query<{ wait_event_type: string | null; query: string }>(
          'SELECT wait_event_type, query FROM pg_stat_activity WHERE pid = $1',
          [pid],
        );
        return rows[0]?.wait_event_type === 'Lock' && statement.test(rows[0].query);
      },
      20_000,
    );
  }

  async function waitForBackendGone(pid: number): Promise<void> {
    await waitFor(
      `backend ${pid} to end`,
      async () => (await sql.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0,
      20_000,
    );
  }

  async function observe(run: Run): Promise<Observed> {
    const intent = await ledger.get(run.spec.partner, run.spec.key);
    return {
      status: intent?.status ?? null,
      attempt: intent?.attempt ?? null,
      owner: intent?.owner ?? null,
      resolvedBy: intent?.resolvedBy ?? null,
      partnerReference: intent?.partnerReference ?? null,
      executions: fake.executions.filter((e) => e.reference === run.spec.reference).length,
    };
  }

  /** Starts the worker of `run`, kills it at its point, and waits until its database session is over too. */
  async function crash(run: Run): Promise<void> {
    const expected = EXPECTED[run.variant];
    let blocker: PoolClient | undefined;
    try {
      if (expected.point === 'a') {
        // An uncommitted row for the same (partner, key): the worker's claim (INSERT ... ON CONFLICT) waits
        // for this transaction inside PostgreSQL.
        blocker = await sql.connect();
        await blocker.query('BEGIN');
        await blocker.query(
          `INSERT INTO intents (partner, operation, key, fingerprint, status, attempt, lease_expires_at)
           VALUES ($1, $2, $3, 'crash-test-blocker', 'in_progress', 1, now())`,
          [run.spec.partner, run.spec.operation, run.spec.key],
        );
      }
      const worker = startCrashPointWorker({
        databaseUrl: db.url,
        partnerUrl: fake.url,
        leaseMs: CHILD_LEASE_MS,
        owner: run.owner,
        spec: run.spec,
        stops: expected.stops,
        serverChecksClient: expected.serverChecksClient,
      });
      run.worker = worker;
      if (expected.point === 'c') heldAtPartner.set(run.spec.key, run);
      const ready = await worker.next('ready');
      expect(ready.checkInterval).to.equal(expected.serverChecksClient ? '20ms' : '0');
      switch (expected.point) {
        case 'a':
          await waitForLockWait(ready.pid, /INSERT INTO intents/);
          break;
        case 'b':
          await worker.next('claimed');
          break;
        case 'c':
          // Settles when the partner holds the request (the worker is being killed), or if the worker got
          // further than that or died otherwise (the assertions on its events then fail).
          await Promise.race([
            run.heldAtPartner.promise,
            worker.next('answered').then(
              () => undefined,
              () => undefined,
            ),
          ]);
          break;
        case 'd':
          await worker.next('answered');
          break;
        case 'e': {
          const claimed = await worker.next('claimed');
          await worker.next('answered');
          blocker = await sql.connect();
          await blocker.query('BEGIN');
          await blocker.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [claimed.intentId]);
          worker.go('answered');
          await waitForLockWait(ready.pid, /UPDATE intents\s+SET status = 'completed'/);
          break;
        }
      }
      run.killedBy = await worker.kill();
      if (blocker && expected.serverChecksClient) {
        // PostgreSQL polls the socket every 20 ms while the statement waits: it aborts it, the session ends.
        await waitForBackendGone(ready.pid);
        await blocker.query('ROLLBACK');
      } else if (blocker) {
        // Default settings: the statement goes on once the lock is free and commits for a dead client.
        await blocker.query('ROLLBACK');
        await waitForBackendGone(ready.pid);
      } else {
        await waitForBackendGone(ready.pid);
      }
      run.events = worker.events.map((e) => e.event);
      run.afterKill = await observe(run);
    } finally {
      if (blocker) {
        await blocker.query('ROLLBACK').catch(() => undefined);
        blocker.release();
      }
    }
  }

  /** The partner call of the surviving consumer: the same HTTP charge, without the test's kill hook. */
  function charge(run: Run, counter: 'calls1' | 'calls2'): PartnerCall {
    return async ({ signal }) => {
      run[counter] += 1;
      const response = await fetch(`${fake.url}/v1/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          reference: run.spec.reference,
          amount: run.spec.amount,
          currency: run.spec.currency,
        }),
        signal,
      });
      if (!response.ok) throw Object.assign(new Error(`HTTP ${response.status}`), { response });
      const body = (await response.json()) as { id: string };
      return { partnerReference: body.id, response: { id: body.id } };
    };
  }

  function reconciler(to: Date): ReconcilerConfig {
    return {
      ...acmePay,
      stuckAfter: '0s',
      settlementLag: '0s',
      // The fake partner dates its executions by this machine's clock, the database's.
      clockSkew: '0s',
      coverage: { from: coverageFrom, to },
    };
  }

  async function reconcileExecutions(name: string): Promise<ReconciliationResult> {
    const file = join(dir, name);
    writeSettlementFile(file, fake.executions);
    const [report] = await reconcile({ pool: sql, reconciler: reconciler(await dbNow()), file });
    reports.push(report);
    return report;
  }

  function outcomeOf(result: Settled<RunResult> | undefined, calls: number): string {
    if (!result) return 'none';
    if (result.ok) return result.value.replayed ? 'replayed' : calls === 1 ? 'called' : `called x${calls}`;
    return result.error instanceof IntentOutcomeUnknownError ? 'unknown' : `error ${String(result.error)}`;
  }

  it(`kills ${VARIANTS.reduce((n, v) => n + RUNS[v], 0)} workers, each exactly at its point`, async () => {
    const started = Date.now();
    const queue = [...runs];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let run = queue.shift(); run; run = queue.shift()) await crash(run);
      }),
    );
    timings.kills = Date.now() - started;
    for (const run of runs) {
      const expected = EXPECTED[run.variant];
      const where = `${run.variant} ${run.spec.key}`;
      expect(run.killedBy, where).to.equal('SIGKILL');
      expect(run.events, where).to.deep.equal(expected.events);
      expect(run.afterKill, where).to.deep.include(expected.afterKill);
      if (expected.afterKill.status === 'in_progress') {
        expect(run.afterKill, where).to.deep.include({
          attempt: 1,
          owner: run.owner,
          partnerReference: null,
        });
      }
      if (run.variant === 'e-committed') {
        // The dead worker's completion: recorded by its own statement, after its death.
        expect(run.afterKill, where).to.deep.include({ attempt: 1, owner: run.owner, resolvedBy: 'caller' });
        expect(run.afterKill?.partnerReference, where).to.match(/^nsu_/);
      }
    }
  });

  it('once the leases end, redelivery calls the partner only for keys no claim survived; the rest wait', async () => {
    const started = Date.now();
    await waitFor(
      'every lease of the killed workers to end',
      async () =>
        (await sql.query('SELECT 1 FROM intents WHERE settled_at IS NULL AND lease_expires_at > now()'))
          .rowCount === 0,
      CHILD_LEASE_MS + 10_000,
      50,
    );
    await Promise.all(
      runs.map(async (run) => {
        run.redelivery1 = await settle(ledger.run(run.spec, charge(run, 'calls1')));
      }),
    );
    timings.redelivery1 = Date.now() - started;
    for (const run of runs) {
      expect(outcomeOf(run.redelivery1, run.calls1), `${run.variant} ${run.spec.key}`).to.equal(
        EXPECTED[run.variant].redelivery1,
      );
    }
  });

  it('reconciling the partner settlement file settles every stuck intent: executed -> completed, absent -> not_executed', async () => {
    const started = Date.now();
    const report = await reconcileExecutions('settlement-1.csv');
    timings.reconcile1 = Date.now() - started;
    const count = (r: Expected['reconciled']) => runs.filter((run) => EXPECTED[run.variant].reconciled === r);
    expect(report).to.deep.include({
      status: 'succeeded',
      error: null,
      rowsRejected: 0,
      rowsRead: fake.executions.length,
      matched: fake.executions.length,
      resolved: { completed: count('completed').length, notExecuted: count('not_executed').length },
    });
    expect(Object.values(report.discrepancies).every((n) => n === 0)).to.equal(true);
    for (const run of runs) {
      run.reconciled = await observe(run);
      const expected = EXPECTED[run.variant];
      const where = `${run.variant} ${run.spec.key}`;
      if (expected.reconciled === null) {
        expect(run.reconciled.status, where).to.equal('completed');
        expect(run.reconciled.resolvedBy, where).to.equal('caller');
        continue;
      }
      expect(run.reconciled.status, where).to.equal(expected.reconciled);
      expect(run.reconciled.resolvedBy, where).to.equal(`reconciler:run-${report.runId}`);
      if (expected.reconciled === 'completed') {
        const execution = fake.executions.find((e) => e.reference === run.spec.reference);
        expect(run.reconciled.partnerReference, where).to.equal(execution?.id);
      }
    }
  });

  it('redelivery after reconciliation retries exactly the intents proven not executed, as attempt 2', async () => {
    const started = Date.now();
    await Promise.all(
      runs.map(async (run) => {
        run.redelivery2 = await settle(ledger.run(run.spec, charge(run, 'calls2')));
      }),
    );
    timings.redelivery2 = Date.now() - started;
    for (const run of runs) {
      const where = `${run.variant} ${run.spec.key}`;
      expect(outcomeOf(run.redelivery2, run.calls2), where).to.equal(EXPECTED[run.variant].redelivery2);
      run.final = await observe(run);
      expect(run.final, where).to.deep.include({
        status: 'completed',
        attempt: EXPECTED[run.variant].finalAttempt,
        executions: 1,
      });
    }
  });

  it('invariants: no execution without an intent, none twice, every intent settled, a full re-run finds nothing', async () => {
    // No partner execution without an intent (of the right amount), whatever killed whom.
    const intents = await sql.query<{ reference: string; status: string; amount: string; currency: string }>(
      `SELECT reference, status, amount::text AS amount, currency FROM intents WHERE partner = 'acme-pay'`,
    );
    const byReference = new Map(intents.rows.map((row) => [row.reference, row]));
    for (const execution of fake.executions) {
      const intent = byReference.get(execution.reference);
      expect(intent, `execution ${execution.id} (${execution.reference}) has an intent`).to.not.equal(
        undefined,
      );
      expect(intent).to.deep.include({ amount: '10.00', currency: 'BRL' });
    }
    // At most one execution per key; here exactly one, since every key ends completed.
    const perKey = new Map<string, number>();
    for (const e of fake.executions) perKey.set(e.reference, (perKey.get(e.reference) ?? 0) + 1);
    expect([...perKey.values()].filter((n) => n > 1)).to.deep.equal([]);
    expect(perKey.size).to.equal(runs.length);
    expect(fake.executions.length).to.equal(runs.length);
    // Every intent settled (none waits, none is flagged): there was no second execution to flag.
    expect(intents.rows.map((row) => row.status).filter((s) => s !== 'completed')).to.deep.equal([]);
    const open = await sql.query('SELECT kind, intent_id FROM discrepancies');
    expect(open.rows).to.deep.equal([]);
    // A final run over the partner's complete file: everything matches, nothing is settled or flagged.
    const final = await reconcileExecutions('settlement-2.csv');
    expect(final).to.deep.include({
      status: 'succeeded',
      rowsRead: runs.length,
      matched: runs.length,
      resolved: { completed: 0, notExecuted: 0 },
    });
    expect(Object.values(final.discrepancies).every((n) => n === 0)).to.equal(true);
    expect((await sql.query('SELECT 1 FROM discrepancies')).rowCount).to.equal(0);
    // Attempts: the dead workers' attempts keep their owner and no outcome; the reconciler's word is on them.
    const attempts = await sql.query<{ owner: string; outcome: string | null; resolution: string | null }>(
      `SELECT a.owner, a.outcome, a.resolution FROM intent_attempt_history a WHERE a.owner LIKE 'doomed-%'`,
    );
    for (const attempt of attempts.rows) {
      const variant = attempt.owner.replace(/^doomed-/, '').replace(/-\d+$/, '') as Variant;
      const expected = EXPECTED[variant];
      expect(attempt.outcome, attempt.owner).to.equal(variant === 'e-committed' ? 'completed' : null);
      expect(attempt.resolution, attempt.owner).to.equal(expected.reconciled);
    }
    expect(attempts.rowCount).to.equal(runs.filter((r) => r.variant !== 'a-aborted').length);

    printFigures();
  });

  function printFigures(): void {
    const header = [
      'crash point',
      'runs',
      'after kill',
      'redelivery 1',
      'reconciler',
      'redelivery 2',
      'final',
      'executions',
      'executed twice',
    ];
    const rows = VARIANTS.map((variant) => {
      const mine = runs.filter((run) => run.variant === variant);
      const tally = (values: string[]) => {
        const counts = new Map<string, number>();
        for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
        return [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
      };
      return [
        EXPECTED[variant].label,
        String(mine.length),
        tally(mine.map((r) => `${r.afterKill?.status ?? 'no intent'}/${r.afterKill?.executions} exec`)),
        tally(mine.map((r) => outcomeOf(r.redelivery1, r.calls1))),
        tally(
          mine.map((r) =>
            r.reconciled?.resolvedBy?.startsWith('reconciler') ? (r.reconciled.status ?? '') : 'untouched',
          ),
        ),
        tally(mine.map((r) => outcomeOf(r.redelivery2, r.calls2))),
        tally(mine.map((r) => `${r.final?.status} (attempt ${r.final?.attempt})`)),
        String(mine.reduce((n, r) => n + (r.final?.executions ?? 0), 0)),
        String(mine.filter((r) => (r.final?.executions ?? 0) > 1).length),
      ];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells: string[]) => `      | ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
    console.log(line(header));
    console.log(line(widths.map((w) => '-'.repeat(w))));
    for (const row of rows) console.log(line(row));
    console.log(
      `      runs ${runs.length}, partner executions ${fake.executions.length}, discrepancies 0;` +
        ` reconciliation 1: ${JSON.stringify(reports[0]?.resolved)}; timings ms ${JSON.stringify(timings)}`,
    );
  }
});
