/**
 * What both benchmarks share: a throwaway PostgreSQL server (embedded, or `BENCH_DATABASE_URL`), one fresh
 * database per measurement, closed-loop load with latency percentiles, and stderr-only progress output
 * (stdout is reserved for the one JSON object of `--json`).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { createDataSource } from '../src/database/createDataSource.js';
import { type EmbeddedServer, startEmbeddedPostgres } from '../src/database/embeddedPostgres.js';
import { migrate } from '../src/database/migrate.js';

/** Progress and diagnostics: always stderr. */
export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

/** The server every measurement of one `npm run bench` runs against. */
export interface BenchServer {
  /** Connection string of the maintenance database (`postgres`), used to create and drop databases. */
  readonly adminUrl: string;
  /** `SHOW server_version`. */
  readonly version: string;
  /** 'embedded' (throwaway, started here) or 'BENCH_DATABASE_URL'. */
  readonly kind: 'embedded' | 'BENCH_DATABASE_URL';
  /** A position in the server's own log (embedded only; auto_explain output of the profiling runs). */
  serverLogMark(): number;
  /** The server's log lines since `mark` (at most the last 20,000 lines are kept). */
  serverLogSince(mark: number): string[];
  /** PID of the postmaster when the server was started here, for CPU accounting of its processes. */
  readonly postmasterPid: number | undefined;
  /**
   * A new database, empty or a copy of `template` (which must have no open connection); dropped by
   * {@link BenchServer.stop} unless dropped earlier.
   */
  createDatabase(label: string, template?: string): Promise<{ name: string; url: string }>;
  dropDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

const SERVER_LOG_LINES = 20_000;

export async function startBenchServer(): Promise<BenchServer> {
  const serverLog: string[] = [];
  /** Lines ever logged; serverLog holds the last ones. */
  let logged = 0;
  let embedded: EmbeddedServer | undefined;
  let postmasterPid: number | undefined;
  let adminUrl = process.env.BENCH_DATABASE_URL;
  if (!adminUrl) {
    const dataDir = mkdtempSync(join(tmpdir(), 'intent-ledger-bench-'));
    embedded = await startEmbeddedPostgres({
      dataDir,
      persistent: false,
      onLog: (line) => {
        logged++;
        serverLog.push(line);
        if (serverLog.length > SERVER_LOG_LINES) serverLog.splice(0, serverLog.length - SERVER_LOG_LINES);
      },
    });
    adminUrl = embedded.url;
    postmasterPid = Number(readFileSync(join(dataDir, 'cluster', 'postmaster.pid'), 'utf8').split('\n')[0]);
  }
  const version = (await queryOnce<{ server_version: string }>(adminUrl, 'SHOW server_version'))[0]
    .server_version;
  const created = new Set<string>();
  let counter = 0;
  const server: BenchServer = {
    adminUrl,
    version,
    kind: embedded ? 'embedded' : 'BENCH_DATABASE_URL',
    serverLogMark: () => logged,
    serverLogSince: (mark) => serverLog.slice(Math.max(0, serverLog.length - (logged - mark))),
    postmasterPid,
    async createDatabase(label, template) {
      const name = `il_bench_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${++counter}`;
      // FILE_COPY copies the files instead of WAL-logging every block: seconds, not a minute, for 1M intents.
      await queryOnce(
        adminUrl,
        template
          ? `CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY FILE_COPY`
          : `CREATE DATABASE ${name}`,
      );
      created.add(name);
      return { name, url: withDatabase(adminUrl, name) };
    },
    async dropDatabase(name) {
      await queryOnce(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      created.delete(name);
    },
    async stop() {
      if (embedded) {
        await embedded.stop();
        return;
      }
      for (const name of [...created]) await server.dropDatabase(name);
    },
  };
  return server;
}

/** The same server URL pointed at another database. */
function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** One statement on its own connection. */
async function queryOnce<R extends object = Record<string, unknown>>(
  url: string,
  sql: string,
  values?: unknown[],
): Promise<R[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows as R[];
  } finally {
    await client.end();
  }
}

/** Result of one closed-loop measurement. */
interface LoadSample {
  ops: number;
  seconds: number;
  /** Per-operation latencies in milliseconds, in completion order. */
  latencies: number[];
}

/**
 * Closed loop: `concurrency` workers each start the next operation as soon as their previous one finished,
 * until `durationMs` has passed. Latency is measured around `op` only (the queueing for a pool connection
 * is inside it, as a caller would see it). Any error aborts the measurement: a benchmark that silently
 * counts failures as fast operations lies.
 */
async function closedLoop(
  concurrency: number,
  durationMs: number,
  op: (n: number) => Promise<unknown>,
): Promise<LoadSample> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  const deadline = start + durationMs;
  const worker = async () => {
    while (performance.now() < deadline) {
      const n = next++;
      const t0 = performance.now();
      await op(n);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { ops: latencies.length, seconds: (performance.now() - start) / 1000, latencies };
}

/** What one slot cost, beside its throughput: robust to a noisy machine where throughput is not. */
export interface SlotCost {
  /** CPU of this (client) process, ms. */
  clientCpuMs: number;
  /** CPU of the PostgreSQL server's processes, ms; undefined when the server is not ours (BENCH_DATABASE_URL). */
  serverCpuMs: number | undefined;
  /** WAL written by the whole server, bytes. */
  walBytes: number;
}

/** Measures CPU (client and server) and WAL around slots. One extra connection, one query per reading. */
export class Meter {
  private constructor(
    private readonly client: Client,
    private readonly postmasterPid: number | undefined,
  ) {}

  static async open(server: BenchServer): Promise<Meter> {
    const client = new Client({ connectionString: server.adminUrl });
    await client.connect();
    return new Meter(client, server.postmasterPid);
  }

  async around<T>(work: () => Promise<T>): Promise<{ result: T; cost: SlotCost }> {
    const before = await this.read();
    const result = await work();
    const after = await this.read();
    return {
      result,
      cost: {
        clientCpuMs: (after.client - before.client) / 1000,
        serverCpuMs: serverCpuBetween(before.server, after.server),
        walBytes: after.wal - before.wal,
      },
    };
  }

  close(): Promise<void> {
    return this.client.end();
  }

  private async read(): Promise<{ client: number; server: Map<number, number> | undefined; wal: number }> {
    const { rows } = await this.client.query<{ wal: string }>(
      "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal",
    );
    const usage = process.cpuUsage();
    return {
      client: usage.user + usage.system,
      server: this.postmasterPid === undefined ? undefined : processTreeCpuMs(this.postmasterPid),
      wal: Number(rows[0].wal),
    };
  }
}

/** Kernel clock ticks per second (`getconf CLK_TCK`): 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/**
 * CPU (ms) the server's processes used between two readings. Only processes alive at the second reading
 * count, each from its first reading (or from 0 when it started in between): a backend or autovacuum worker
 * that exited in between takes its CPU with it, which would otherwise make the difference negative.
 */
function serverCpuBetween(
  before: Map<number, number> | undefined,
  after: Map<number, number> | undefined,
): number | undefined {
  if (before === undefined || after === undefined) return undefined;
  let total = 0;
  for (const [pid, ms] of after) total += ms - Math.min(ms, before.get(pid) ?? 0);
  return total;
}

/**
 * utime + stime (ms) of the postmaster and each of its children (backends, walwriter, checkpointer, io
 * workers), by pid.
 */
function processTreeCpuMs(postmasterPid: number): Map<number, number> | undefined {
  const byPid = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the command name (which may hold spaces) in parentheses: state ppid ... utime(14) stime(15).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(entry);
    const ppid = Number(fields[1]);
    if (pid !== postmasterPid && ppid !== postmasterPid) continue;
    byPid.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS);
  }
  return byPid.size > 0 ? byPid : undefined;
}

/** Figures of one variant over all its measured slots. */
export interface VariantFigures {
  ops: number;
  opsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** ops/s of each measured slot, in round order. */
  perRound: number[];
  /** CPU of the benchmark process per operation, µs (the pg driver, and the Ledger class when it runs). */
  clientCpuUs: number;
  /** CPU of the PostgreSQL server per operation, µs (null when the server is not local). */
  serverCpuUs: number | null;
  /** WAL written per operation, bytes. */
  walBytes: number;
}

/** One contender: `op(slot)` gives a fresh operation for one slot (`slot` keeps keys of slots apart). */
export interface Variant {
  name: string;
  op(slot: number): (n: number) => Promise<unknown>;
}

let slotCounter = 0;

/**
 * Measures variants side by side at one concurrency: a warm-up slot each, then `rounds` rounds in which
 * every variant runs one slot, the order rotating each round (A B C, B C A, ...). Many short interleaved
 * slots rather than a few long ones: a burst of load from another process then hits every variant about
 * equally instead of deciding one variant's figure.
 */
export async function compareVariants(
  meter: Meter,
  variants: readonly Variant[],
  options: { concurrency: number; rounds: number; slotMs: number; warmupMs: number },
): Promise<Map<string, VariantFigures>> {
  for (const variant of variants)
    await closedLoop(options.concurrency, options.warmupMs, variant.op(++slotCounter));
  const slots = new Map<string, { sample: LoadSample; cost: SlotCost }[]>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < options.rounds; r++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(i + r) % variants.length];
      const op = variant.op(++slotCounter);
      const { result, cost } = await meter.around(() => closedLoop(options.concurrency, options.slotMs, op));
      slots.get(variant.name)!.push({ sample: result, cost });
    }
  }
  return new Map([...slots].map(([name, measured]) => [name, summarise(measured)]));
}

function summarise(slots: { sample: LoadSample; cost: SlotCost }[]): VariantFigures {
  const samples = slots.map((slot) => slot.sample);
  const latencies = samples.flatMap((sample) => sample.latencies);
  const ops = samples.reduce((sum, sample) => sum + sample.ops, 0);
  const seconds = samples.reduce((sum, sample) => sum + sample.seconds, 0);
  const clientCpuMs = slots.reduce((sum, slot) => sum + slot.cost.clientCpuMs, 0);
  const walBytes = slots.reduce((sum, slot) => sum + slot.cost.walBytes, 0);
  const serverCpuMs = slots.some((slot) => slot.cost.serverCpuMs === undefined)
    ? undefined
    : slots.reduce((sum, slot) => sum + (slot.cost.serverCpuMs ?? 0), 0);
  return {
    ops,
    opsPerSecond: round(ops / seconds, 0),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
    perRound: samples.map((sample) => round(sample.ops / sample.seconds, 0)),
    clientCpuUs: round((clientCpuMs * 1000) / ops, 0),
    serverCpuUs: serverCpuMs === undefined ? null : round((serverCpuMs * 1000) / ops, 0),
    walBytes: round(walBytes / ops, 0),
  };
}

/**
 * `reference` CPU per op ÷ `other` CPU per op (client + server): on a CPU-bound machine, the throughput ratio
 * the hardware allows, which moves far less with other load than the measured throughput ratio.
 */
export function cpuRatio(reference: VariantFigures, other: VariantFigures): number | null {
  if (reference.serverCpuUs === null || other.serverCpuUs === null) return null;
  return round((reference.clientCpuUs + reference.serverCpuUs) / (other.clientCpuUs + other.serverCpuUs), 3);
}

/** "ops/s client/server µs WAL B" for progress lines. */
export function describeFigures(figures: VariantFigures): string {
  return (
    `${figures.opsPerSecond} ops/s p50 ${figures.p50Ms} p99 ${figures.p99Ms} ms, CPU/op ${figures.clientCpuUs}+` +
    `${figures.serverCpuUs ?? '?'} µs, WAL/op ${figures.walBytes} B`
  );
}

/** Nearest-rank percentile of `values` (not modified). */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** Rounds for display and JSON: `digits` decimals. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Applies every migration to the database at `url`, over a data source of its own. */
export async function migrateDatabase(url: string): Promise<void> {
  const dataSource = createDataSource({ url, poolSize: 1 });
  await dataSource.initialize();
  try {
    await migrate(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
