/**
 * bench/ledgerScaling: scaling out on one PostgreSQL. N consumer processes, each with a ledger and a pool of
 * its own (as N replicas of a service would run), beside N processes of the prepared two-statement baseline
 * (bench/ledger.ts), for N = 1, 2 and 4, on one database.
 *
 * Each process is started once per N and warmed up; then the two groups take turns (ledger, baseline;
 * baseline, ledger; ...), every process of a group running the same slot at the same time, so a burst of
 * load from outside hits both groups alike. A group's throughput is the sum of its processes' operations
 * over the slot. On a 2-core machine more processes cannot add CPU: what this shows is whether the ledger
 * keeps its ratio to the baseline when its calls come from several processes at once (contention on the
 * same indexes and on WAL), not how far one node goes with more cores.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { Client } from 'pg';
import { createLedger } from '../src/ledger/createLedger.js';
import { BASELINE_SCHEMA, LEASE_MS, OWNER, silentLogger } from './ledger.js';
import { type BenchServer, log, round } from './support.js';

export interface ScalingOptions {
  quick: boolean;
  /** Process counts per group. @default [1, 2, 4] */
  processes?: number[];
}

interface GroupFigures {
  opsPerSecond: number;
  p99Ms: number;
  /** ops/s of each measured slot, in round order. */
  perRound: number[];
}

interface ScalingEntry {
  processes: number;
  /** In-flight calls per process (its closed loop), each process with a pool of 10. */
  concurrencyPerProcess: number;
  ledger: GroupFigures;
  baseline: GroupFigures;
  /** ledger ops/s ÷ baseline ops/s, pooled over the rounds. */
  ratio: number;
  /** Lowest and highest ratio of a single round. */
  ratioRange: [number, number];
}

export interface ScalingResult {
  slotSeconds: number;
  rounds: number;
  entries: ScalingEntry[];
}

/** One child process and its stdout, line by line. */
class Consumer {
  private readonly lines: AsyncIterator<string>;
  private readonly reader: Interface;
  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    this.reader = createInterface({ input: child.stdout });
    this.lines = this.reader[Symbol.asyncIterator]();
  }

  static async start(variant: 'ledger' | 'baseline', url: string): Promise<Consumer> {
    const child = spawn(process.execPath, [join(__dirname, 'ledgerScalingChild.js'), variant], {
      env: { ...process.env, DATABASE_URL: url },
    });
    child.stderr
      .setEncoding('utf8')
      .on('data', (chunk: string) => log(`${variant} ${child.pid}: ${chunk.trim()}`));
    const consumer = new Consumer(child);
    const first = await consumer.nextLine();
    if (first !== 'ready') throw new Error(`${variant} consumer said ${first}`);
    return consumer;
  }

  async run(
    slot: number,
    ms: number,
    concurrency: number,
  ): Promise<{ ops: number; seconds: number; latencies: number[] }> {
    this.child.stdin.write(`run ${slot} ${ms} ${concurrency}\n`);
    return JSON.parse(await this.nextLine());
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('close', resolve));
    this.child.stdin.end('quit\n');
    await exited;
    this.reader.close();
  }

  private async nextLine(): Promise<string> {
    const next = await this.lines.next();
    if (next.done) throw new Error(`consumer ${this.child.pid} exited (code ${this.child.exitCode})`);
    return next.value;
  }
}

let slotCounter = 0;

async function runGroup(group: Consumer[], ms: number, concurrency: number) {
  const samples = await Promise.all(group.map((consumer) => consumer.run(++slotCounter, ms, concurrency)));
  const ops = samples.reduce((sum, sample) => sum + sample.ops, 0);
  const seconds = Math.max(...samples.map((sample) => sample.seconds));
  return { opsPerSecond: ops / seconds, latencies: samples.flatMap((sample) => sample.latencies) };
}

function p99(values: number[]): number {
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(0.99 * sorted.length) - 1))];
}

export async function benchLedgerScaling(
  server: BenchServer,
  options: ScalingOptions,
): Promise<ScalingResult> {
  const processes = options.processes ?? [1, 2, 4];
  const timing = options.quick
    ? { rounds: 3, slotMs: 800, warmupMs: 500 }
    : { rounds: 6, slotMs: 2_000, warmupMs: 1_000 };
  const concurrencyPerProcess = 16;
  const database = await server.createDatabase('scaling');
  // Migrate once here; the consumers open the ledger without migrating, as replicas of a service do.
  const migrated = await createLedger({
    databaseUrl: database.url,
    leaseMs: LEASE_MS,
    owner: OWNER,
    logger: silentLogger,
  });
  await migrated.close();
  const admin = new Client({ connectionString: database.url });
  await admin.connect();
  await admin.query(BASELINE_SCHEMA);
  await admin.end();
  const entries: ScalingEntry[] = [];
  try {
    for (const n of processes) {
      const ledgers = await Promise.all(
        Array.from({ length: n }, () => Consumer.start('ledger', database.url)),
      );
      const baselines = await Promise.all(
        Array.from({ length: n }, () => Consumer.start('baseline', database.url)),
      );
      try {
        await runGroup(ledgers, timing.warmupMs, concurrencyPerProcess);
        await runGroup(baselines, timing.warmupMs, concurrencyPerProcess);
        const measured = { ledger: [] as number[], baseline: [] as number[] };
        const latencies = { ledger: [] as number[], baseline: [] as number[] };
        for (let r = 0; r < timing.rounds; r++) {
          const order = r % 2 === 0 ? (['ledger', 'baseline'] as const) : (['baseline', 'ledger'] as const);
          for (const name of order) {
            const slot = await runGroup(
              name === 'ledger' ? ledgers : baselines,
              timing.slotMs,
              concurrencyPerProcess,
            );
            measured[name].push(slot.opsPerSecond);
            for (const latency of slot.latencies) latencies[name].push(latency);
          }
        }
        const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
        const perRoundRatios = measured.ledger.map((ops, r) => ops / measured.baseline[r]);
        const entry: ScalingEntry = {
          processes: n,
          concurrencyPerProcess,
          ledger: {
            opsPerSecond: round(mean(measured.ledger), 0),
            p99Ms: round(p99(latencies.ledger), 2),
            perRound: measured.ledger.map((ops) => round(ops, 0)),
          },
          baseline: {
            opsPerSecond: round(mean(measured.baseline), 0),
            p99Ms: round(p99(latencies.baseline), 2),
            perRound: measured.baseline.map((ops) => round(ops, 0)),
          },
          ratio: round(mean(measured.ledger) / mean(measured.baseline), 3),
          ratioRange: [round(Math.min(...perRoundRatios), 3), round(Math.max(...perRoundRatios), 3)],
        };
        entries.push(entry);
        log(
          `scaling ${n} + ${n} processes (c=${concurrencyPerProcess} each): ledger ${entry.ledger.opsPerSecond} ops/s ` +
            `(p99 ${entry.ledger.p99Ms} ms), baseline ${entry.baseline.opsPerSecond} ops/s (p99 ${entry.baseline.p99Ms} ms), ` +
            `ratio ${entry.ratio} (rounds ${entry.ratioRange.join('..')})`,
        );
      } finally {
        await Promise.all([...ledgers, ...baselines].map((consumer) => consumer.stop()));
      }
    }
  } finally {
    await server.dropDatabase(database.name);
  }
  return { slotSeconds: timing.slotMs / 1000, rounds: timing.rounds, entries };
}
