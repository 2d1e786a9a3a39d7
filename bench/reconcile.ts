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
 * 3. the floor (an in-process pg `COPY ... FROM STDIN` into a temp table + `CREATE TEMP TABLE ... AS SELECT
 *    ... JOIN intents`), before and after the CLI run (the mean is the floor), and the durable floor (the
 *    same, then every row stored under its identity in a copy of partner_records, committed), twice;
 * 4. the CLI, under `/usr/bin/time -v` for its peak RSS. When it fails on its 30 s client query timeout, the
 *    engine runs again without it (bench/reconcileChild.ts) to show what it needs at that size.
 * 5. with `--history N` (5,000,000 by default in the full run), a 100,000-row report reconciled on a
 *    database without history and on one holding N settled intents and their records besides, interleaved.
 * With `--profile`, or when a target is missed in a full run, the main size runs once more with `--cpu-prof`
 * and auto_explain (plans, buffers and trigger times of every statement over 200 ms), followed by a
 * measurement of what storing the partner rows costs (bench/partnerRecordsCost.ts).
 */
import {
  chmodSync,
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import acmePay from '../reconcilers/acme-pay.js';
import { type MeasuredRun, measure } from './childProcess.js';
import { type PartnerRecordsCost, partnerRecordsCost } from './partnerRecordsCost.js';
import { type ProfileSummary, summariseProfile } from './profile.js';
import {
  benchWindow,
  type ExpectedOutcome,
  expectedOutcome,
  generateHistory,
  generateIntents,
  PARTNER,
  type ReferenceOrder,
  type Window,
  writePartnerCsv,
} from './reconcileData.js';
import { type BenchServer, log, migrateDatabase, round } from './support.js';

/** The CLI, found relative to this file so the benchmark works from dist/ and from any other outDir. */
const CLI = join(__dirname, '../src/cli/main.js');
const ENGINE_CHILD = join(__dirname, 'reconcileChild.js');

export interface ReconcileBenchOptions {
  quick: boolean;
  /** Rows of the main size. @default 1,000,000 (200,000 with quick) */
  rows?: number;
  /**
   * Settled intents of history (bench/reconcileData.ts, `generateHistory`) beside the 100,000-row report of
   * the history comparison; 0 skips it. @default 5,000,000 (500,000 with quick)
   */
  history?: number;
  /** Profile the main size even when every target is met. */
  profile?: boolean;
  /** How the partner's references run in the data (bench/reconcileData.ts). @default 'sequential' */
  references?: ReferenceOrder;
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
  /** COPY + join + storing each row under its identity in a copy of partner_records, committed. */
  durableFloor: { seconds: number; samples: number[]; method: string };
  engine: EngineFigures;
  /**
   * When the CLI failed on its client query timeout: the same run through the engine itself
   * (bench/reconcileChild.ts), which has none, to show what the engine needs at this size.
   */
  engineWithoutTimeout: (EngineFigures & { floorRatio: number; differences: string[] }) | undefined;
  /** engine seconds ÷ floor seconds. */
  floorRatio: number;
  /** engine seconds ÷ durable floor seconds. */
  durableFloorRatio: number;
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

/** The same 100,000-row report reconciled with and without settled intents of history, interleaved. */
interface HistoryFigures {
  rows: number;
  history: number;
  /** CLI seconds of each round without history, then with it (rounds alternate which goes first). */
  withoutSeconds: number[];
  withSeconds: number[];
  /** with ÷ without of each round. */
  pairRatios: number[];
  /** median with ÷ median without. */
  ratio: number;
  generateSeconds: number;
  differences: string[];
  /** With --profile: every statement of one run on the history-laden database, with its plan. */
  plans?: { ms: number; statement: string; plan: string }[];
}

export interface ReconcileBenchResult {
  /** How the partner's references ran in the data (`--random-references`). */
  references: ReferenceOrder;
  main: SizeFigures;
  small: SizeFigures | undefined;
  /** peak RSS at N ÷ peak RSS at N/10. */
  memoryRatio: number;
  history: HistoryFigures | undefined;
  targets: {
    /** 1M rows in 10 s, i.e. 100,000 rows/s whatever N is. */
    rowsPerSecond: Target;
    floorRatio: Target;
    peakRssMb: Target;
    memoryRatio: Target;
    /** With history ÷ without, at most 1.3 (absent when --history 0). */
    historyRatio?: Target;
  };
  profile: ProfileFigures | undefined;
}

export async function benchReconcile(
  server: BenchServer,
  options: ReconcileBenchOptions,
): Promise<ReconcileBenchResult> {
  const rows = options.rows ?? (options.quick ? 200_000 : 1_000_000);
  const historyRows = options.history ?? (options.quick ? 500_000 : 5_000_000);
  if (!Number.isInteger(historyRows) || historyRows < 0)
    throw new Error(`--history must be a whole number >= 0 (got ${historyRows})`);
  if (!Number.isInteger(rows) || rows < 1_000)
    throw new Error(`--rows must be a whole number >= 1000 (got ${rows})`);
  const work = mkdtempSync(join(tmpdir(), 'intent-ledger-bench-files-'));
  // The embedded server runs as the `postgres` OS user when we are root: server-side COPY must read here.
  chmodSync(work, 0o755);
  const sizes: Dataset[] = [];
  const references = options.references ?? 'sequential';
  const prepare = (n: number, history = 0) => prepareSize(server, work, n, history, references);
  try {
    const main = await prepare(rows);
    sizes.push(main);
    const mainFigures = await benchSize(server, main);
    const small = await prepare(Math.round(rows / 10));
    sizes.push(small);
    const smallFigures = await benchSize(server, small);
    const memoryRatio = round(mainFigures.engine.peakRssMb / smallFigures.engine.peakRssMb, 2);
    let history: HistoryFigures | undefined;
    if (historyRows > 0) {
      const plain = small.rows === HISTORY_REPORT_ROWS ? small : await prepare(HISTORY_REPORT_ROWS);
      if (plain !== small) sizes.push(plain);
      const laden = await prepare(HISTORY_REPORT_ROWS, historyRows);
      sizes.push(laden);
      history = await benchHistory(server, plain, laden, options.quick ? 2 : 3);
      if (options.profile) {
        history.plans = await explainHistoryRun(server, laden);
        for (const entry of [...history.plans].sort((a, b) => b.ms - a.ms).slice(0, 8)) {
          log(`  with history (${round(entry.ms, 1)} ms): ${entry.statement.slice(0, 100)}`);
        }
      }
    }
    const ok = mainFigures.engine.exitCode === 0;
    const targets: ReconcileBenchResult['targets'] = {
      rowsPerSecond: target(100_000, mainFigures.engine.rowsPerSecond, (v, t) => ok && v >= t),
      floorRatio: target(4, mainFigures.floorRatio, (v, t) => ok && v <= t),
      peakRssMb: target(256, mainFigures.engine.peakRssMb, (v, t) => ok && v <= t),
      memoryRatio: target(1.3, memoryRatio, (v, t) => ok && v <= t),
    };
    if (history) {
      const historyOk = history.differences.length === 0;
      targets.historyRatio = target(1.3, history.ratio, (v, t) => historyOk && v <= t);
    }
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
    return { references, main: mainFigures, small: smallFigures, memoryRatio, history, targets, profile };
  } finally {
    for (const size of sizes) await server.dropDatabase(size.template.name);
    rmSync(work, { recursive: true, force: true });
  }
}

function target(goal: number, value: number, ok: (value: number, goal: number) => boolean): Target {
  return { target: goal, value, met: ok(value, goal) };
}

/** Rows of the report the history comparison reconciles, with and without history. */
const HISTORY_REPORT_ROWS = 100_000;

/**
 * The history comparison: the same report and intents, on a database without history and on one with
 * `laden.history` settled intents (and their records) besides, reconciled by the CLI in interleaved
 * rounds, the order alternating, so a burst of outside load hits both about equally.
 */
async function benchHistory(
  server: BenchServer,
  plain: Dataset,
  laden: Dataset,
  rounds: number,
): Promise<HistoryFigures> {
  const withoutSeconds: number[] = [];
  const withSeconds: number[] = [];
  const differences: string[] = [];
  const expected = expectedOutcome(plain.rows);
  const once = async (data: Dataset, into: number[]) => {
    const run = await onCopy(server, data, (url) => runCli(url, data.file, data.reconcilers));
    into.push(round(run.seconds, 3));
    for (const difference of compare(parseReport(run.stdout), expected, run)) {
      differences.push(`${data.history > 0 ? 'with' : 'without'} history: ${difference}`);
    }
  };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      await once(plain, withoutSeconds);
      await once(laden, withSeconds);
    } else {
      await once(laden, withSeconds);
      await once(plain, withoutSeconds);
    }
    log(
      `reconcile history: round ${r + 1}: ${withoutSeconds.at(-1)} s without, ` +
        `${withSeconds.at(-1)} s with ${laden.history} settled intents of history`,
    );
  }
  const ratio = round(median(withSeconds) / median(withoutSeconds), 2);
  log(`reconcile history: ratio ${ratio}`);
  return {
    rows: plain.rows,
    history: laden.history,
    withoutSeconds,
    withSeconds,
    pairRatios: withSeconds.map((seconds, i) => round(seconds / withoutSeconds[i], 2)),
    ratio,
    generateSeconds: laden.generateSeconds,
    differences,
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** One size's data: a pristine template database (never reconciled; each run gets a copy), the file. */
interface Dataset {
  rows: number;
  /** Settled intents of history beside the report's intents. */
  history: number;
  template: { name: string; url: string };
  file: string;
  fileBytes: number;
  reconcilers: string;
  generateSeconds: number;
  csvSeconds: number;
}

async function prepareSize(
  server: BenchServer,
  work: string,
  rows: number,
  history: number,
  references: ReferenceOrder,
): Promise<Dataset> {
  const window = benchWindow();
  const suffix = `${history > 0 ? `_h${history}` : ''}${references === 'random' ? '_random' : ''}`;
  const template = await server.createDatabase(`reconcile_${rows}${suffix}`);
  log(
    `reconcile N=${rows}: generating ${history > 0 ? `${history} settled intents of history, then ` : ''}intents`,
  );
  let started = performance.now();
  await migrateDatabase(template.url);
  const client = new Client({ connectionString: template.url });
  await client.connect();
  try {
    await generateHistory(client, history, window, references);
    await generateIntents(client, rows, window, PARTNER, references);
  } finally {
    await client.end();
  }
  const generateSeconds = (performance.now() - started) / 1000;
  started = performance.now();
  const label = `${rows}${suffix.replaceAll('_', '-')}`;
  const file = join(work, `acme-pay-${label}.csv`);
  const fileBytes = await writePartnerCsv(file, rows, window, references);
  const csvSeconds = (performance.now() - started) / 1000;
  const reconcilers = writeReconcilerDir(work, label, file, window);
  log(
    `reconcile N=${rows}: intents in ${round(generateSeconds, 1)} s, ` +
      `file ${round(fileBytes / 1024 ** 2, 1)} MB in ${round(csvSeconds, 1)} s`,
  );
  return { rows, history, template, file, fileBytes, reconcilers, generateSeconds, csvSeconds };
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
  const durable = [await durableFloor(data.template.url, file), await durableFloor(data.template.url, file)];
  const durableSeconds = (durable[0].seconds + durable[1].seconds) / 2;
  log(`reconcile N=${rows}: durable floor ${durable.map((d) => round(d.seconds, 2)).join(', ')} s`);

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
    durableFloor: {
      seconds: round(durableSeconds, 3),
      samples: durable.map((d) => round(d.seconds, 3)),
      method: durable[0].method,
    },
    engine: engineFigures(run, rows, report),
    engineWithoutTimeout: undefined,
    floorRatio: round(run.seconds / floorSeconds, 2),
    durableFloorRatio: round(run.seconds / durableSeconds, 2),
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
function writeReconcilerDir(work: string, label: string, file: string, window: Window): string {
  return writeReconcilers(join(work, `reconcilers-${label}`), window, [{ partner: PARTNER, file }]);
}

/**
 * Writes into `path` one reconciler per partner, each the shipped acme-pay reconciler under that partner's
 * name, reading its own file, with the timings that fit the generated data (bench/reconcileData.ts): every
 * stuck intent's lease ended hours ago, an absent one is provable because the report covers its time plus
 * the settlement lag, and nothing is old enough to be unresolved. Returns `path`.
 */
export function writeReconcilers(
  path: string,
  window: Window,
  partners: readonly { partner: string; file: string }[],
): string {
  mkdirSync(path, { recursive: true });
  if (acmePay.partner !== PARTNER || acmePay.source.type !== 'csv') {
    throw new Error('reconcilers/acme-pay.ts no longer describes the CSV partner this benchmark generates');
  }
  for (const { partner, file } of partners) {
    const config = {
      ...acmePay,
      partner,
      deadline: '30d',
      coverage: {
        from: new Date(window.from.getTime() - 3_600_000).toISOString(),
        to: new Date(window.from.getTime() + window.spanMs + 5 * 3_600_000).toISOString(),
      },
      source: { ...acmePay.source, path: file },
    };
    // Plain CommonJS, so loading it costs no TypeScript compilation in the timed run.
    writeFileSync(join(path, `${partner}.js`), `module.exports = ${JSON.stringify(config, null, 2)};\n`);
  }
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
  SELECT i.id AS intent_id, r.nsu, r.pedido, r.valor, r.moeda, r.data FROM floor_rows r
    JOIN intents i ON i.partner = '${PARTNER}' AND i.reference = r.pedido`;
const FLOOR_METHOD = 'in-process pg COPY FROM STDIN (client-side, no psql start-up)';

/**
 * The floor: PostgreSQL reads the file into a table and finds the matches in one join, from this process
 * over one pg connection (`COPY ... FROM STDIN` fed from the file, client-side like the CLI), so no
 * process start-up is in it. Timed from connecting to the count.
 */
async function floor(url: string, file: string): Promise<FloorRun> {
  const started = performance.now();
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(STAGE);
    await copyFile(client, file, 'floor_rows');
    await client.query(JOIN);
    const { rows } = await client.query<{ count: string }>('SELECT count(*) FROM floor_matches');
    return {
      seconds: (performance.now() - started) / 1000,
      method: FLOOR_METHOD,
      matches: Number(rows[0].count),
    };
  } finally {
    await client.end();
  }
}

/**
 * The durable floor: the floor, then every row stored under its identity, the way a run must store what a
 * re-run recognises and what a discrepancy shows (identity, intent, amount and currency, the row's
 * references, line and time), in a table like partner_records with its indexes, in one committed
 * transaction. The floor does not parse dates (the time column is `now()`, the same width); amounts are
 * read as the engine reads the Brazilian format, bad ones stored as null. The table is created before and
 * dropped after the timing.
 */
async function durableFloor(url: string, file: string): Promise<{ seconds: number; method: string }> {
  const setup = new Client({ connectionString: url });
  await setup.connect();
  try {
    await setup.query('DROP TABLE IF EXISTS floor_records');
    await setup.query('CREATE TABLE floor_records (LIKE partner_records INCLUDING ALL)');
    await setup.query(`INSERT INTO floor_records (partner, identity, run_id, line) VALUES ('x', 'x', 0, 0)`);
    await setup.query('VACUUM ANALYZE floor_records');
  } finally {
    await setup.end();
  }
  const started = performance.now();
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(STAGE);
    await copyFile(client, file, 'floor_rows');
    await client.query(
      JOIN.replace('JOIN intents', 'LEFT JOIN intents').replace(
        'SELECT i.id',
        'SELECT row_number() OVER () AS line, i.id',
      ),
    );
    await client.query(
      `INSERT INTO floor_records (partner, identity, run_id, line, reference, partner_reference, amount, currency,
                                  executed_at, intent_id)
       SELECT '${PARTNER}', nsu || '|' || pedido || '#1', 1, line, pedido, nsu,
              CASE WHEN valor ~ '^-?[0-9.]+,[0-9]{2}$' THEN replace(replace(valor, '.', ''), ',', '.')::numeric END,
              moeda, now(), intent_id
         FROM floor_matches`,
    );
    await client.query('COMMIT');
    return {
      seconds: (performance.now() - started) / 1000,
      method: `${FLOOR_METHOD}, LEFT JOIN, INSERT into a copy of partner_records (3 indexes), COMMIT`,
    };
  } finally {
    await client.query('DROP TABLE IF EXISTS floor_records').catch(() => undefined);
    await client.end();
  }
}

/** Streams `file` into `table` with `COPY ... FROM STDIN` on `client`. */
async function copyFile(client: Client, file: string, table: string): Promise<void> {
  await pipeline(
    createReadStream(file),
    client.query(copyFrom(`COPY ${table} FROM STDIN WITH ${COPY_OPTIONS}`)),
  );
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
  return reportDifferences(report, expected);
}

/** Where a run's report (the CLI's `--json` fields) differs from what the data was built to produce. */
export function reportDifferences(report: Record<string, unknown>, expected: ExpectedOutcome): string[] {
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
    await autoExplain(server, url, '200ms');
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
  const slowStatements = explainedSince(server, mark);
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

/** Has every later session of the database at `url` log its statements over `minDuration` with their plans. */
async function autoExplain(
  server: BenchServer,
  url: string,
  minDuration: string,
  nested = true,
): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  for (const setting of [
    `session_preload_libraries = 'auto_explain'`,
    `auto_explain.log_min_duration = '${minDuration}'`,
    'auto_explain.log_analyze = on',
    'auto_explain.log_buffers = on',
    'auto_explain.log_triggers = on',
    `auto_explain.log_nested_statements = ${nested ? 'on' : 'off'}`,
  ]) {
    await adminQuery(server.adminUrl, `ALTER DATABASE ${name} SET ${setting}`);
  }
}

/** The auto_explain entries (duration and plan) the server logged since `mark`. */
function explainedSince(server: BenchServer, mark: number): string[] {
  return server
    .serverLogSince(mark)
    .join('\n')
    .split(/\n(?=\S*\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\n]*LOG: {2}duration:)/)
    .filter((entry) => entry.includes('duration:') && entry.includes('plan:'))
    .map((entry) => entry.slice(0, 6_000));
}

/**
 * One more run of the history-laden copy with every statement of the run explained (auto_explain with
 * ANALYZE, no duration threshold): the plan each statement keeps when the run's own changes are not in the
 * statistics yet. Slower than the measured runs; not part of the ratio.
 */
async function explainHistoryRun(
  server: BenchServer,
  data: Dataset,
): Promise<NonNullable<HistoryFigures['plans']>> {
  const mark = server.serverLogMark();
  await onCopy(server, data, async (url) => {
    // Not the nested statements: the foreign-key checks of the discrepancies raised would flood the log.
    await autoExplain(server, url, '0', false);
    return runCli(url, data.file, data.reconcilers);
  });
  // The run's statements (the foreign-key checks and the migrations' look-ups are not), by their whole text.
  return explainedSince(server, mark)
    .map((text) => ({
      ms: Number(/duration: ([\d.]+) ms/.exec(text)?.[1] ?? 0),
      statement: (/Query Text: ([^\n]*)/.exec(text)?.[1] ?? '').trim().slice(0, 160),
      plan: text.slice(text.indexOf('plan:')),
    }))
    .filter((entry) => /rec_|intents|partner_records|discrepanc/.test(entry.plan));
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
