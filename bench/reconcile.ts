/**
 * bench/reconcile: `intent-ledger reconcile acme-pay --file F --json` end to end, as a child process (the
 * way operators and the worker's cron run it), beside its floor: PostgreSQL's own COPY of the same file into
 * a table plus one join that finds the same matches.
 *
 * For each size (N, then N/10 for the memory slope):
 * 1. a template database: N intents in mixed states + attempts, written by PostgreSQL
 *    (bench/reconcileData.ts), then VACUUM ANALYZE and CHECKPOINT so no contender pays for the generator's
 *    leftovers. Every run gets its own copy (CREATE DATABASE ... TEMPLATE), so each starts from the same state;
 * 2. the N-row acme-pay file, streamed to a world-readable temp file;
 * 3. the floor (psql `\copy` into a temp table + `CREATE TEMP TABLE ... AS SELECT ... JOIN intents`), timed
 *    as a process like the CLI, before and after the CLI run (the mean is the floor);
 * 4. the CLI, under `/usr/bin/time -v` for its peak RSS. When it fails on its 30 s client query timeout, the
 *    engine runs again without it (bench/reconcileChild.ts) to show what it needs at that size.
 * With `--profile`, or when a target is missed in a full run, the main size runs once more with `--cpu-prof`
 * and auto_explain (plans, buffers and trigger times of every statement over 200 ms), followed by a
 * measurement of what storing the partner rows costs (bench/partnerRecordsCost.ts).
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import acmePay from '../reconcilers/acme-pay.js';
import { createDataSource } from '../src/database/createDataSource.js';
import { migrate } from '../src/database/migrate.js';
import { type MeasuredRun, measure } from './childProcess.js';
import { type PartnerRecordsCost, partnerRecordsCost } from './partnerRecordsCost.js';
import { type ProfileSummary, summariseProfile } from './profile.js';
import {
  benchWindow,
  type ExpectedOutcome,
  expectedOutcome,
  generateIntents,
  PARTNER,
  type Window,
  writePartnerCsv,
} from './reconcileData.js';
import { type BenchServer, log, round } from './support.js';

/** The CLI, found relative to this file so the benchmark works from dist/ and from any other outDir. */
const CLI = join(__dirname, '../src/cli/main.js');
const ENGINE_CHILD = join(__dirname, 'reconcileChild.js');

export interface ReconcileBenchOptions {
  quick: boolean;
  /** Rows of the main size. @default 1,000,000 (20,000 with quick) */
  rows?: number;
  /** Profile the main size even when every target is met. */
  profile?: boolean;
}

interface EngineFigures {
  seconds: number;
  rowsPerSecond: number;
  peakRssMb: number;
  peakRssSource: MeasuredRun['peakRssSource'];
  exitCode: number | null;
  /** The CLI's `--json` output. */
  report: Record<string, unknown> | undefined;
}

export interface SizeFigures {
  rows: number;
  fileMb: number;
  generateSeconds: number;
  csvSeconds: number;
  floor: { seconds: number; samples: number[]; method: string; matches: number };
  engine: EngineFigures;
  /**
   * When the CLI failed on its client query timeout: the same run through the engine itself
   * (bench/reconcileChild.ts), which has none, to show what the engine needs at this size.
   */
  engineWithoutTimeout: (EngineFigures & { floorRatio: number; differences: string[] }) | undefined;
  /** engine seconds ÷ floor seconds. */
  floorRatio: number;
  expected: ExpectedOutcome;
  /** Where the CLI's report differs from what the data was built to produce (empty when it agrees). */
  differences: string[];
}

interface ProfileFigures {
  reason: string;
  /** What was profiled: the CLI, or the engine child when the CLI could not finish. */
  via: string;
  seconds: number;
  exitCode: number | null;
  cpu: ProfileSummary | undefined;
  /** auto_explain output (statements over 200 ms) of the profiled run; embedded server only. */
  slowStatements: string[];
  /** Where the time of storing every partner row goes (bench/partnerRecordsCost.ts). */
  partnerRecords: PartnerRecordsCost | undefined;
}

export interface Target {
  target: number;
  value: number;
  met: boolean;
}

export interface ReconcileBenchResult {
  main: SizeFigures;
  small: SizeFigures | undefined;
  /** peak RSS at N ÷ peak RSS at N/10. */
  memoryRatio: number;
  targets: {
    /** 1M rows in 20 s, i.e. 50,000 rows/s whatever N is. */
    rowsPerSecond: Target;
    floorRatio: Target;
    peakRssMb: Target;
    memoryRatio: Target;
  };
  profile: ProfileFigures | undefined;
}

export async function benchReconcile(
  server: BenchServer,
  options: ReconcileBenchOptions,
): Promise<ReconcileBenchResult> {
  const rows = options.rows ?? (options.quick ? 20_000 : 1_000_000);
  if (!Number.isInteger(rows) || rows < 1_000)
    throw new Error(`--rows must be a whole number >= 1000 (got ${rows})`);
  const work = mkdtempSync(join(tmpdir(), 'intent-ledger-bench-files-'));
  // The embedded server runs as the `postgres` OS user when we are root: server-side COPY must read here.
  chmodSync(work, 0o755);
  const sizes: Dataset[] = [];
  try {
    const main = await prepareSize(server, work, rows);
    sizes.push(main);
    const mainFigures = await benchSize(server, main);
    const small = await prepareSize(server, work, Math.round(rows / 10));
    sizes.push(small);
    const smallFigures = await benchSize(server, small);
    const memoryRatio = round(mainFigures.engine.peakRssMb / smallFigures.engine.peakRssMb, 2);
    const ok = mainFigures.engine.exitCode === 0;
    const targets = {
      rowsPerSecond: target(50_000, mainFigures.engine.rowsPerSecond, (v, t) => ok && v >= t),
      floorRatio: target(3, mainFigures.floorRatio, (v, t) => ok && v <= t),
      peakRssMb: target(256, mainFigures.engine.peakRssMb, (v, t) => ok && v <= t),
      memoryRatio: target(1.3, memoryRatio, (v, t) => ok && v <= t),
    };
    const missed = Object.entries(targets)
      .filter(([, value]) => !value.met)
      .map(([name]) => name);
    let profile: ProfileFigures | undefined;
    if (options.profile || (!options.quick && missed.length > 0)) {
      const reason = missed.length > 0 ? `missed: ${missed.join(', ')}` : '--profile';
      // A run the CLI cannot finish (its client query timeout) is profiled through the engine itself.
      const viaEngine = mainFigures.engine.exitCode !== 0 && mainFigures.engineWithoutTimeout !== undefined;
      profile = await profileRun(server, main, reason, viaEngine);
    }
    return { main: mainFigures, small: smallFigures, memoryRatio, targets, profile };
  } finally {
    for (const size of sizes) await server.dropDatabase(size.template.name);
    rmSync(work, { recursive: true, force: true });
  }
}

function target(goal: number, value: number, ok: (value: number, goal: number) => boolean): Target {
  return { target: goal, value, met: ok(value, goal) };
}

/** One size's data: a pristine template database (never reconciled; each run gets a copy), the file. */
interface Dataset {
  rows: number;
  template: { name: string; url: string };
  file: string;
  fileBytes: number;
  reconcilers: string;
  generateSeconds: number;
  csvSeconds: number;
}

async function prepareSize(server: BenchServer, work: string, rows: number): Promise<Dataset> {
  const window = benchWindow();
  const template = await server.createDatabase(`reconcile_${rows}`);
  log(`reconcile N=${rows}: generating intents`);
  let started = performance.now();
  const dataSource = createDataSource({ url: template.url, poolSize: 1 });
  await dataSource.initialize();
  try {
    await migrate(dataSource);
  } finally {
    await dataSource.destroy();
  }
  const client = new Client({ connectionString: template.url });
  await client.connect();
  try {
    await generateIntents(client, rows, window);
  } finally {
    await client.end();
  }
  const generateSeconds = (performance.now() - started) / 1000;
  started = performance.now();
  const file = join(work, `acme-pay-${rows}.csv`);
  const fileBytes = await writePartnerCsv(file, rows, window);
  const csvSeconds = (performance.now() - started) / 1000;
  const reconcilers = writeReconcilerDir(work, rows, file, window);
  log(
    `reconcile N=${rows}: intents in ${round(generateSeconds, 1)} s, ` +
      `file ${round(fileBytes / 1024 ** 2, 1)} MB in ${round(csvSeconds, 1)} s`,
  );
  return { rows, template, file, fileBytes, reconcilers, generateSeconds, csvSeconds };
}

/** Floor, CLI (on a copy of the template), floor again; the engine without the CLI if the CLI timed out. */
async function benchSize(server: BenchServer, data: Dataset): Promise<SizeFigures> {
  const { rows, file, reconcilers } = data;
  const floorBefore = await floor(data.template.url, file);
  log(
    `reconcile N=${rows}: floor ${round(floorBefore.seconds, 2)} s (${floorBefore.method}), ${floorBefore.matches} matches`,
  );
  const run = await onCopy(server, data, (url) => runCli(url, file, reconcilers));
  log(
    `reconcile N=${rows}: CLI ${round(run.seconds, 2)} s, peak RSS ${round(run.peakRssMb, 1)} MB, exit ${run.code}`,
  );
  if (run.code !== 0) log(`CLI stderr:\n${run.stderr.slice(-2000)}`);
  const floorAfter = await floor(data.template.url, file);
  log(`reconcile N=${rows}: floor again ${round(floorAfter.seconds, 2)} s`);
  const floorSeconds = (floorBefore.seconds + floorAfter.seconds) / 2;

  const report = parseReport(run.stdout);
  const expected = expectedOutcome(rows);
  const figures: SizeFigures = {
    rows,
    fileMb: round(data.fileBytes / 1024 ** 2, 1),
    generateSeconds: round(data.generateSeconds, 1),
    csvSeconds: round(data.csvSeconds, 1),
    floor: {
      seconds: round(floorSeconds, 3),
      samples: [round(floorBefore.seconds, 3), round(floorAfter.seconds, 3)],
      method: floorBefore.method,
      matches: floorBefore.matches,
    },
    engine: engineFigures(run, rows, report),
    engineWithoutTimeout: undefined,
    floorRatio: round(run.seconds / floorSeconds, 2),
    expected,
    differences: compare(report, expected, run),
  };
  if (figures.differences.length > 0) {
    log(
      `reconcile N=${rows}: the report differs from the data's design:\n  ${figures.differences.join('\n  ')}`,
    );
  }
  if (run.code !== 0 && /query read timeout/i.test(run.stderr)) {
    log(`reconcile N=${rows}: the CLI hit its client query timeout; running the engine without it`);
    const direct = await onCopy(server, data, (url) => runEngine(url, file, reconcilers));
    const directReport = parseReport(direct.stdout);
    figures.engineWithoutTimeout = {
      ...engineFigures(direct, rows, directReport),
      floorRatio: round(direct.seconds / floorSeconds, 2),
      differences: compare(directReport, expected, direct),
    };
    log(
      `reconcile N=${rows}: engine without the timeout ${round(direct.seconds, 2)} s, ` +
        `peak RSS ${round(direct.peakRssMb, 1)} MB, exit ${direct.code}`,
    );
  }
  return figures;
}

function engineFigures(
  run: MeasuredRun,
  rows: number,
  report: Record<string, unknown> | undefined,
): EngineFigures {
  return {
    seconds: round(run.seconds, 3),
    rowsPerSecond: round(rows / run.seconds, 0),
    peakRssMb: round(run.peakRssMb, 1),
    peakRssSource: run.peakRssSource,
    exitCode: run.code,
    report,
  };
}

/** Runs `work` against a fresh copy of the size's template, dropped afterwards. */
async function onCopy<T>(server: BenchServer, data: Dataset, work: (url: string) => Promise<T>): Promise<T> {
  const copy = await server.createDatabase(`reconcile_${data.rows}_run`, data.template.name);
  try {
    return await work(copy.url);
  } finally {
    await server.dropDatabase(copy.name);
  }
}

/** A temp directory holding only an acme-pay reconciler whose timings fit the generated data. */
function writeReconcilerDir(work: string, rows: number, file: string, window: Window): string {
  const path = join(work, `reconcilers-${rows}`);
  mkdirSync(path, { recursive: true });
  // The shipped acme-pay reconciler, with the timings that fit the generated data: every stuck intent's
  // lease ended hours ago, an absent one is provable because the report covers its time plus the settlement
  // lag, and nothing is old enough to be unresolved.
  if (acmePay.partner !== PARTNER || acmePay.source.type !== 'csv') {
    throw new Error('reconcilers/acme-pay.ts no longer describes the CSV partner this benchmark generates');
  }
  const config = {
    ...acmePay,
    deadline: '30d',
    coverage: {
      from: new Date(window.from.getTime() - 3_600_000).toISOString(),
      to: new Date(window.from.getTime() + window.spanMs + 5 * 3_600_000).toISOString(),
    },
    source: { ...acmePay.source, path: file },
  };
  // Plain CommonJS, so loading it costs no TypeScript compilation in the timed run.
  writeFileSync(
    join(path, 'acme-pay.js'),
    `module.exports = { default: ${JSON.stringify(config, null, 2)} };\n`,
  );
  return path;
}

function runCli(
  url: string,
  file: string,
  reconcilers: string,
  nodeFlags: string[] = [],
): Promise<MeasuredRun> {
  return measure(
    process.execPath,
    [...nodeFlags, CLI, 'reconcile', PARTNER, '--file', file, '--json', '--reconcilers', reconcilers],
    { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' } },
  );
}

/** The engine through bench/reconcileChild.js: no CLI, no client query timeout. */
function runEngine(
  url: string,
  file: string,
  reconcilers: string,
  nodeFlags: string[] = [],
): Promise<MeasuredRun> {
  return measure(process.execPath, [...nodeFlags, ENGINE_CHILD, PARTNER, file, reconcilers], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
  });
}

interface FloorRun {
  seconds: number;
  method: string;
  matches: number;
}

const STAGE = `CREATE TEMP TABLE floor_rows (pedido text, nsu text, valor text, moeda text, data text, bandeira text)`;
const COPY_OPTIONS = `(FORMAT csv, DELIMITER ';', HEADER, ENCODING 'LATIN1')`;
const JOIN = `CREATE TEMP TABLE floor_matches AS
  SELECT i.id AS intent_id, r.nsu, r.valor, r.data FROM floor_rows r
    JOIN intents i ON i.partner = '${PARTNER}' AND i.reference = r.pedido`;

/**
 * The floor: PostgreSQL reads the file into a table and finds the matches in one join. Through psql's
 * `\copy` (client-side, like the CLI) when psql is installed, else a server-side `COPY FROM 'file'`.
 */
async function floor(url: string, file: string): Promise<FloorRun> {
  const psql = findOnPath('psql');
  if (psql) {
    const run = await measure(psql, [
      url,
      '-X',
      '-q',
      '-t',
      '-A',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      STAGE,
      '-c',
      `\\copy floor_rows FROM '${file}' WITH ${COPY_OPTIONS}`,
      '-c',
      JOIN,
      '-c',
      'SELECT count(*) FROM floor_matches',
    ]);
    if (run.code !== 0) throw new Error(`psql floor failed (${run.code}): ${run.stderr}`);
    return { seconds: run.seconds, method: 'psql \\copy (client-side)', matches: Number(run.stdout.trim()) };
  }
  const started = performance.now();
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(STAGE);
    await client.query(`COPY floor_rows FROM '${file}' WITH ${COPY_OPTIONS}`);
    await client.query(JOIN);
    const { rows } = await client.query<{ count: string }>('SELECT count(*) FROM floor_matches');
    return {
      seconds: (performance.now() - started) / 1000,
      method: 'server-side COPY (no psql on PATH)',
      matches: Number(rows[0].count),
    };
  } finally {
    await client.end();
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir) continue;
    try {
      if (readdirSync(dir).includes(name)) return join(dir, name);
    } catch {
      // unreadable PATH entry
    }
  }
  return undefined;
}

function parseReport(stdout: string): Record<string, unknown> | undefined {
  const start = stdout.indexOf('{');
  if (start === -1) return undefined;
  try {
    const parsed = JSON.parse(stdout.slice(start)) as unknown;
    return Array.isArray(parsed)
      ? (parsed[0] as Record<string, unknown>)
      : (parsed as Record<string, unknown>);
  } catch {
    return undefined;
  }
}

function compare(
  report: Record<string, unknown> | undefined,
  expected: ExpectedOutcome,
  run: MeasuredRun,
): string[] {
  if (!report) return [`no JSON report on stdout (exit ${run.code}); stderr: ${run.stderr.slice(-500)}`];
  const differences: string[] = [];
  const check = (name: string, actual: unknown, wanted: number) => {
    if (actual !== wanted)
      differences.push(`${name}: reported ${JSON.stringify(actual)}, data built for ${wanted}`);
  };
  if (report.status !== 'succeeded')
    differences.push(`status: ${JSON.stringify(report.status)} (${report.error})`);
  check('rowsRead', report.rowsRead, expected.rowsRead);
  check('rowsRejected', report.rowsRejected, expected.rowsRejected);
  const resolved = (report.resolved ?? {}) as Record<string, unknown>;
  check('resolved.completed', resolved.completed, expected.resolvedCompleted);
  check('resolved.notExecuted', resolved.notExecuted, expected.resolvedNotExecuted);
  const discrepancies = (report.discrepancies ?? {}) as Record<string, unknown>;
  for (const [kind, wanted] of Object.entries(expected.discrepancies)) {
    check(`discrepancies.${kind}`, discrepancies[kind] ?? 0, wanted);
  }
  return differences;
}

/**
 * Runs the CLI (or, when the CLI cannot finish, the engine child) again on a fresh copy with --cpu-prof, with
 * auto_explain logging every statement over 200 ms with its plan, buffers and trigger times.
 */
async function profileRun(
  server: BenchServer,
  data: Dataset,
  reason: string,
  viaEngine: boolean,
): Promise<ProfileFigures> {
  log(`reconcile: profiling (${reason})${viaEngine ? ' through the engine child' : ''}`);
  const profileDir = join(dirname(data.file), 'cpu-profile');
  const mark = server.serverLogMark();
  const run = await onCopy(server, data, async (url) => {
    const name = new URL(url).pathname.slice(1);
    for (const setting of [
      `session_preload_libraries = 'auto_explain'`,
      `auto_explain.log_min_duration = '200ms'`,
      'auto_explain.log_analyze = on',
      'auto_explain.log_buffers = on',
      'auto_explain.log_triggers = on',
      'auto_explain.log_nested_statements = on',
    ]) {
      await adminQuery(server.adminUrl, `ALTER DATABASE ${name} SET ${setting}`);
    }
    const flags = ['--cpu-prof', '--cpu-prof-dir', profileDir];
    return viaEngine
      ? runEngine(url, data.file, data.reconcilers, flags)
      : runCli(url, data.file, data.reconcilers, flags);
  });
  const profiles = (() => {
    try {
      return readdirSync(profileDir).filter((name) => name.endsWith('.cpuprofile'));
    } catch {
      return [];
    }
  })();
  const cpu = profiles.length > 0 ? summariseProfile(join(profileDir, profiles[0])) : undefined;
  const slowStatements = server
    .serverLogSince(mark)
    .join('\n')
    .split(/\n(?=\S*\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\n]*LOG: {2}duration:)/)
    .filter((entry) => entry.includes('duration:') && entry.includes('plan:'))
    .map((entry) => entry.slice(0, 6_000));
  log(
    `reconcile: profiled run ${round(run.seconds, 2)} s (exit ${run.code}), ${slowStatements.length} slow statements logged`,
  );
  if (cpu) {
    log(
      `  CPU self time by place: ${cpu.places.map((p) => `${p.place} ${p.selfMs} ms (${p.share}%)`).join(', ')}`,
    );
    log(`  heaviest functions: ${cpu.functions.map((f) => `${f.name} ${f.selfMs} ms`).join(', ')}`);
  }
  for (const statement of slowStatements) {
    const duration = /duration: ([\d.]+ ms)/.exec(statement)?.[1];
    const text = /Query Text: ([^\n]*)/.exec(statement)?.[1] ?? '';
    log(`  slow statement (${duration}): ${text.trim().slice(0, 120)}`);
  }
  const costRows = Math.min(data.rows, 200_000);
  log(`reconcile: measuring what storing ${costRows} partner rows costs`);
  const partnerRecords = await onCopy(server, data, (url) => partnerRecordsCost(url, costRows));
  for (const variant of partnerRecords.variants) {
    log(`  partner_records ${variant.name}: ${variant.seconds} s, ${variant.microsPerRow} µs/row`);
  }
  return {
    reason,
    via: viaEngine ? 'engine child (no client query timeout)' : 'CLI',
    seconds: round(run.seconds, 3),
    exitCode: run.code,
    cpu,
    slowStatements,
    partnerRecords,
  };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
