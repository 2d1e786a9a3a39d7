/**
 * bench/reconcileScaling: scaling reconciliation out on one PostgreSQL. Four partners (acme-pay-1..4, each
 * the acme-pay dialect under its own name) with N intents each and a settlement file each
 * (bench/reconcileData.ts), reconciled on one database:
 *
 * - `one worker`: one worker process firing the four partners' slots one after another (the baseline);
 * - `two workers`: two worker processes started on the same slot at the same moment, each firing the four
 *   partners one after another, as two replicas would: whichever wins a partner's slot election
 *   (`ReconciliationWorker` → `reconcile()` with a slot, the unique (partner, slot) of
 *   sql/startReconciliationRun.ts) runs it, the other skips it and goes on to the next;
 * - `two workers, cron tick`: the same, but each worker fires the four slots at once, as its cron does when
 *   they fall due on the same tick (so one process may run several partners at a time).
 *
 * Each worker is a child process (bench/reconcileScalingChild.ts) holding the database `intent-ledger
 * worker` opens, started and connected before the clock starts: what is timed is from `go` to the last
 * worker's answer, every partner done. Every configuration of a round runs on its own copy of one template
 * database (CREATE DATABASE ... TEMPLATE), and the rounds rotate the order of the configurations, so a burst
 * of outside load hits each about alike.
 *
 * The benchmark fails unless, in every configuration and round: every worker fired every partner once; each
 * partner ran exactly once (one `succeeded` report among the workers, the others `skipped`; one run row for
 * its slot, owned by the worker that reported it); each partner's report is exactly
 * {@link expectedOutcome}(N); and each run is one transaction (every partner record and discrepancy of the
 * run, and its run row, written by one transaction id).
 *
 * On a 2-core machine two workers cannot add CPU: what this shows is that two workers on one database do not
 * serialise on each other (runs of different partners overlap) and never run a partner twice, not how far
 * reconciliation goes with more cores.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface, type Interface } from 'node:readline';
import { Client } from 'pg';
import { reportDifferences, writeReconcilers } from './reconcile.js';
import { benchWindow, expectedOutcome, generateIntents, writePartnerCsv } from './reconcileData.js';
import type { FiredSlot, WorkerOutcome } from './reconcileScalingChild.js';
import { type BenchServer, log, Meter, migrateDatabase, round, type SlotCost } from './support.js';

export interface ReconcileScalingOptions {
  quick: boolean;
  /** Intents (and file rows) per partner. @default 100,000 (20,000 with quick) */
  rowsPerPartner?: number;
}

const PARTNERS = ['acme-pay-1', 'acme-pay-2', 'acme-pay-3', 'acme-pay-4'] as const;

type Firing = 'one-by-one' | 'at-once';

const CONFIGURATIONS: readonly { name: string; workers: number; firing: Firing }[] = [
  { name: 'one worker', workers: 1, firing: 'one-by-one' },
  { name: 'two workers', workers: 2, firing: 'one-by-one' },
  { name: 'two workers, cron tick', workers: 2, firing: 'at-once' },
];

/** One partner's run in one configuration and round. */
interface PartnerRun {
  partner: string;
  /** The worker that won the slot and ran it. */
  worker: string;
  /** The run's own duration (`durationMs` of its report), s. */
  seconds: number;
  /** When it started and ended, s after `go`. */
  from: number;
  to: number;
}

interface ConfigurationRound {
  /** From `go` to every partner done, s. */
  wallSeconds: number;
  runs: PartnerRun[];
  /** Time during which runs of both workers were in flight, s (0 with one worker). */
  overlapSeconds: number;
  /** CPU of the worker processes and of the PostgreSQL server over the round, s (server: null if not ours). */
  workerCpuSeconds: number;
  serverCpuSeconds: number | null;
  /** 1-minute load average of the machine just before the round. */
  loadBefore: number;
}

interface ConfigurationFigures {
  name: string;
  workers: number;
  firing: Firing;
  rounds: ConfigurationRound[];
  /** Median wall time over the rounds, s. */
  wallSeconds: number;
  /** All partners' rows ÷ median wall time. */
  rowsPerSecond: number;
  /** Median wall time ÷ the one worker's median wall time. */
  ratio: number;
  /** Lowest and highest ratio of a single round (against the one worker of the same round). */
  ratioRange: [number, number];
}

export interface ReconcileScalingResult {
  partners: number;
  rowsPerPartner: number;
  rounds: number;
  generateSeconds: number;
  configurations: ConfigurationFigures[];
}

export async function benchReconcileScaling(
  server: BenchServer,
  options: ReconcileScalingOptions,
): Promise<ReconcileScalingResult> {
  const rows = options.rowsPerPartner ?? (options.quick ? 20_000 : 100_000);
  if (!Number.isInteger(rows) || rows < 1_000)
    throw new Error(`--reconcile-scaling-rows must be a whole number >= 1000 (got ${rows})`);
  const rounds = options.quick ? 2 : 3;
  const work = mkdtempSync(join(tmpdir(), 'intent-ledger-bench-scaling-'));
  chmodSync(work, 0o755);
  const window = benchWindow();
  log(`reconcile scaling: generating ${PARTNERS.length} partners × ${rows} intents and files`);
  const started = performance.now();
  const template = await server.createDatabase(`reconcile_scaling_${rows}`);
  const meter = await Meter.open(server);
  try {
    await migrateDatabase(template.url);
    const client = new Client({ connectionString: template.url });
    await client.connect();
    try {
      for (const partner of PARTNERS) await generateIntents(client, rows, window, partner);
    } finally {
      await client.end();
    }
    const files = [];
    for (const partner of PARTNERS) {
      const file = join(work, `${partner}-${rows}.csv`);
      await writePartnerCsv(file, rows, window);
      files.push({ partner, file });
    }
    const reconcilers = writeReconcilers(join(work, 'reconcilers'), window, files);
    const generateSeconds = round((performance.now() - started) / 1000, 1);
    log(`reconcile scaling: data in ${generateSeconds} s`);

    const measured = new Map(CONFIGURATIONS.map((c) => [c.name, [] as ConfigurationRound[]]));
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < CONFIGURATIONS.length; i++) {
        const configuration = CONFIGURATIONS[(i + r) % CONFIGURATIONS.length];
        const copy = await server.createDatabase(`reconcile_scaling_run`, template.name);
        try {
          const result = await runConfiguration(meter, copy.url, reconcilers, configuration, rows);
          measured.get(configuration.name)?.push(result);
          log(
            `reconcile scaling round ${r + 1}, ${configuration.name}: ${result.wallSeconds} s ` +
              `(${result.runs.map((run) => `${run.partner} by ${run.worker} ${run.seconds} s`).join(', ')}; ` +
              `overlap ${result.overlapSeconds} s; load ${result.loadBefore})`,
          );
        } finally {
          await server.dropDatabase(copy.name);
        }
      }
    }
    const baseline = measured.get(CONFIGURATIONS[0].name) ?? [];
    const baselineWall = median(baseline.map((entry) => entry.wallSeconds));
    const configurations = CONFIGURATIONS.map((configuration): ConfigurationFigures => {
      const entries = measured.get(configuration.name) ?? [];
      const wall = median(entries.map((entry) => entry.wallSeconds));
      const perRound = entries.map((entry, index) => entry.wallSeconds / baseline[index].wallSeconds);
      return {
        ...configuration,
        rounds: entries,
        wallSeconds: round(wall, 3),
        rowsPerSecond: round((rows * PARTNERS.length) / wall, 0),
        ratio: round(wall / baselineWall, 3),
        ratioRange: [round(Math.min(...perRound), 3), round(Math.max(...perRound), 3)],
      };
    });
    for (const c of configurations) {
      log(
        `reconcile scaling ${c.name}: median ${c.wallSeconds} s, ${c.rowsPerSecond} rows/s, ` +
          `÷ one worker ${c.ratio} (rounds ${c.ratioRange.join('..')})`,
      );
    }
    return { partners: PARTNERS.length, rowsPerPartner: rows, rounds, generateSeconds, configurations };
  } finally {
    await meter.close();
    await server.dropDatabase(template.name);
    rmSync(work, { recursive: true, force: true });
  }
}

/** Starts the configuration's workers, fires them together, checks what they did and returns the timings. */
async function runConfiguration(
  meter: Meter,
  url: string,
  reconcilers: string,
  configuration: (typeof CONFIGURATIONS)[number],
  rows: number,
): Promise<ConfigurationRound> {
  const owners = Array.from({ length: configuration.workers }, (_, i) => `worker-${i + 1}`);
  const started = await Promise.allSettled(owners.map((owner) => Worker.start(owner, url, reconcilers)));
  const workers = started.flatMap((entry) => (entry.status === 'fulfilled' ? [entry.value] : []));
  let measured: { outcomes: WorkerOutcome[]; cost: SlotCost; wallSeconds: number; goAt: number };
  let slot: Date;
  let loadBefore: number;
  try {
    const failed = started.find((entry) => entry.status === 'rejected');
    if (failed) throw failed.reason;
    loadBefore = round(loadavg()[0], 2);
    // What a cron tick gives both replicas: the same slot, to the second.
    slot = new Date(Math.floor(Date.now() / 1000) * 1000);
    const goAt = Date.now();
    const t0 = performance.now();
    const { result: outcomes, cost } = await meter.around(() =>
      Promise.all(workers.map((worker) => worker.go(slot, configuration.firing))),
    );
    measured = { outcomes, cost, wallSeconds: (performance.now() - t0) / 1000, goAt };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
  const { outcomes, cost, wallSeconds, goAt } = measured;
  const runs = await verify(url, slot, outcomes, rows);
  const placed = runs.map(({ run, fired }) => ({
    partner: run.partner,
    worker: run.worker,
    seconds: run.seconds,
    from: round((fired.startedAtMs - goAt) / 1000, 3),
    to: round((fired.finishedAtMs - goAt) / 1000, 3),
  }));
  return {
    wallSeconds: round(wallSeconds, 3),
    runs: placed,
    overlapSeconds: round(overlap(placed), 3),
    workerCpuSeconds: round(outcomes.reduce((sum, outcome) => sum + outcome.cpuMs, 0) / 1000, 2),
    serverCpuSeconds: cost.serverCpuMs === undefined ? null : round(cost.serverCpuMs / 1000, 2),
    loadBefore,
  };
}

/**
 * Throws unless every worker fired every partner once, each partner ran exactly once and succeeded with the
 * outcome its data was built for, the run rows agree, and each run wrote everything in one transaction.
 */
async function verify(
  url: string,
  slot: Date,
  outcomes: WorkerOutcome[],
  rows: number,
): Promise<{ run: Omit<PartnerRun, 'from' | 'to'> & { runId: string }; fired: FiredSlot }[]> {
  const problems: string[] = [];
  const expected = expectedOutcome(rows);
  const ran: { run: Omit<PartnerRun, 'from' | 'to'> & { runId: string }; fired: FiredSlot }[] = [];
  for (const partner of PARTNERS) {
    const winners: { owner: string; fired: FiredSlot; report: FiredSlot['reports'][number] }[] = [];
    for (const outcome of outcomes) {
      const fires = outcome.fired.filter((fired) => fired.partner === partner);
      if (fires.length !== 1) {
        problems.push(`${outcome.owner} fired ${partner} ${fires.length} times`);
        continue;
      }
      const [fired] = fires;
      if (fired.reports.length !== 1) {
        problems.push(`${outcome.owner}: ${partner} gave ${fired.reports.length} reports (one expected)`);
        continue;
      }
      const [report] = fired.reports;
      if (report.status === 'skipped') continue;
      winners.push({ owner: outcome.owner, fired, report });
    }
    if (winners.length !== 1) {
      problems.push(`${partner} ran ${winners.length} times (by ${winners.map((w) => w.owner).join(', ')})`);
      continue;
    }
    const [{ owner, fired, report }] = winners;
    for (const difference of reportDifferences(report as unknown as Record<string, unknown>, expected)) {
      problems.push(`${partner} (${owner}): ${difference}`);
    }
    if (report.runId === null) problems.push(`${partner} (${owner}): ran without a run id`);
    else
      ran.push({
        run: { partner, worker: owner, seconds: round(report.durationMs / 1000, 3), runId: report.runId },
        fired,
      });
  }
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: runRows } = await client.query<{
      id: string;
      partner: string;
      slot: Date | null;
      owner: string | null;
      status: string;
      run_xid: string;
      writers: string[];
    }>(
      `SELECT r.id, r.partner, r.slot, r.owner, r.status, r.xmin::text AS run_xid,
              ARRAY(SELECT DISTINCT xmin::text FROM partner_records WHERE run_id = r.id
                    UNION SELECT DISTINCT xmin::text FROM discrepancies WHERE run_id = r.id) AS writers
         FROM reconciliation_runs r ORDER BY r.partner`,
    );
    if (runRows.length !== PARTNERS.length)
      problems.push(`${runRows.length} run rows, ${PARTNERS.length} expected (one per partner)`);
    for (const { run } of ran) {
      const row = runRows.find((candidate) => candidate.id === run.runId);
      if (!row) {
        problems.push(`${run.partner}: no run row ${run.runId}`);
        continue;
      }
      if (row.partner !== run.partner || row.owner !== run.worker || row.status !== 'succeeded')
        problems.push(
          `${run.partner}: run row says partner ${row.partner}, owner ${row.owner}, status ${row.status}`,
        );
      if (row.slot?.getTime() !== slot.getTime())
        problems.push(`${run.partner}: run row slot ${row.slot?.toISOString()}, fired ${slot.toISOString()}`);
      if (row.writers.length !== 1 || row.writers[0] !== row.run_xid)
        problems.push(
          `${run.partner}: its records and discrepancies were written by transactions ${row.writers.join(', ')}, ` +
            `its run row by ${row.run_xid} (one transaction expected)`,
        );
    }
  } finally {
    await client.end();
  }
  if (problems.length > 0)
    throw new Error(`reconcile scaling: the workers did not do what they must:\n  ${problems.join('\n  ')}`);
  return ran;
}

/** Time during which at least one run of each of two workers was in flight, s (0 unless two workers ran). */
function overlap(runs: readonly { worker: string; from: number; to: number }[]): number {
  const workers = [...new Set(runs.map((run) => run.worker))];
  if (workers.length !== 2) return 0;
  const [a, b] = workers.map((worker) => busy(runs.filter((run) => run.worker === worker)));
  let total = 0;
  for (const x of a) for (const y of b) total += Math.max(0, Math.min(x.to, y.to) - Math.max(x.from, y.from));
  return total;
}

/** The union of intervals, as disjoint intervals in order. */
function busy(intervals: readonly { from: number; to: number }[]): { from: number; to: number }[] {
  const merged: { from: number; to: number }[] = [];
  for (const { from, to } of [...intervals].sort((x, y) => x.from - y.from)) {
    const last = merged.at(-1);
    if (last && from <= last.to) last.to = Math.max(last.to, to);
    else merged.push({ from, to });
  }
  return merged;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** One worker child process and its stdout, line by line. */
class Worker {
  private readonly lines: AsyncIterator<string>;
  private readonly reader: Interface;
  private readonly exited: Promise<unknown>;
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly owner: string,
  ) {
    this.reader = createInterface({ input: child.stdout });
    this.lines = this.reader[Symbol.asyncIterator]();
    this.exited = new Promise((resolve) => child.once('close', resolve));
  }

  static async start(owner: string, url: string, reconcilers: string): Promise<Worker> {
    const child = spawn(process.execPath, [join(__dirname, 'reconcileScalingChild.js'), owner, reconcilers], {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => log(`${owner}: ${chunk.trim()}`));
    const worker = new Worker(child, owner);
    try {
      const first = await worker.nextLine();
      if (first !== 'ready') throw new Error(`${owner} said ${first}`);
    } catch (error) {
      await worker.stop();
      throw error;
    }
    return worker;
  }

  /** Fires every partner's `slot`; resolves with what the worker did. */
  async go(slot: Date, firing: Firing): Promise<WorkerOutcome> {
    this.child.stdin.write(`go ${slot.toISOString()} ${firing}\n`);
    return JSON.parse(await this.nextLine()) as WorkerOutcome;
  }

  /** Ends its stdin (it closes its database and exits) and waits for it to exit. */
  async stop(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
    this.reader.close();
  }

  private async nextLine(): Promise<string> {
    const next = await this.lines.next();
    if (next.done) throw new Error(`${this.owner} exited (code ${this.child.exitCode})`);
    return next.value;
  }
}
