/**
 * `npm run bench`: both benchmarks on one throwaway PostgreSQL (or `BENCH_DATABASE_URL`), then
 * bench/RESULTS.md. `npm run bench -- --quick --json`: a small version (a few minutes) that prints one
 * JSON object on stdout and everything else on stderr.
 *
 * Flags: --quick, --json, --only ledger|reconcile, --rows N (reconcile size; the N/10 run follows),
 * --history N (settled intents of history for the reconcile history comparison; 0 skips it),
 * --random-references (the reconcile data's partner references at random, as Stripe's or PayPal's ids,
 * instead of counting up as Cielo's NSU; see bench/reconcileData.ts),
 * --profile (CPU profile of the reconcile child and auto_explain of its slow statements, even when every
 * target is met), --candidates (measure the candidate fixes of the ledger's SQL; always on without --quick),
 * --scaling (ledger and baseline from 1, 2 and 4 processes each; always on without --quick),
 * --reconcile-scaling (4 partners reconciled by one worker process and by two at once; always on without
 * --quick; `--only reconcile --rows 1000 --history 0` keeps the rest of a quick run short),
 * --reconcile-scaling-rows N (intents and file rows per partner there; 100,000, or 20,000 with --quick),
 * --no-write (do not touch bench/RESULTS.md), --render FILE (rewrite bench/RESULTS.md from the raw figures a
 * previous run saved, without measuring anything).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchLedger, type LedgerBenchResult } from './ledger.js';
import { benchLedgerCandidates, type LedgerCandidatesResult } from './ledgerCandidates.js';
import { benchLedgerScaling, type ScalingResult } from './ledgerScaling.js';
import { benchReconcile, type ReconcileBenchResult } from './reconcile.js';
import { benchReconcileScaling, type ReconcileScalingResult } from './reconcileScaling.js';
import { renderResults } from './results.js';
import { log, round, startBenchServer, type VariantFigures } from './support.js';
import { writeResults } from './writeResults.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      only: { type: 'string' },
      rows: { type: 'string' },
      history: { type: 'string' },
      'random-references': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      candidates: { type: 'boolean', default: false },
      scaling: { type: 'boolean', default: false },
      'reconcile-scaling': { type: 'boolean', default: false },
      'reconcile-scaling-rows': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      render: { type: 'string' },
    },
  });
  const resultsFile = join(__dirname, '../../bench/RESULTS.md');
  if (values.render) {
    const raw = JSON.parse(readFileSync(values.render, 'utf8')) as Parameters<typeof renderResults>[0];
    writeResults(resultsFile, renderResults({ ...raw, started: new Date(raw.started) }));
    log(`rewrote ${resultsFile} from ${values.render}`);
    return;
  }
  const quick = values.quick;
  const only = values.only;
  if (only !== undefined && only !== 'ledger' && only !== 'reconcile') {
    throw new Error(`--only must be ledger or reconcile (got ${only})`);
  }
  const started = new Date();
  const server = await startBenchServer();
  // Ctrl-C must not leave a throwaway PostgreSQL running (and its data directory behind).
  const interrupted = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping the benchmark's PostgreSQL`);
    server.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  log(
    `PostgreSQL ${server.version} (${server.kind}); node ${process.version}; ${cpus().length} x ${cpus()[0]?.model}`,
  );
  let ledger: LedgerBenchResult | undefined;
  let candidates: LedgerCandidatesResult | undefined;
  let scaling: ScalingResult | undefined;
  let reconcile: ReconcileBenchResult | undefined;
  let reconcileScaling: ReconcileScalingResult | undefined;
  try {
    if (only !== 'reconcile') {
      ledger = await benchLedger(server, { quick });
      if (!quick || values.candidates) candidates = await benchLedgerCandidates(server, { quick });
      if (!quick || values.scaling) scaling = await benchLedgerScaling(server, { quick });
    }
    if (only !== 'ledger') {
      reconcile = await benchReconcile(server, {
        quick,
        rows: values.rows === undefined ? undefined : Number(values.rows),
        history: values.history === undefined ? undefined : Number(values.history),
        profile: values.profile,
        references: values['random-references'] ? 'random' : 'sequential',
      });
      if (!quick || values['reconcile-scaling']) {
        const perPartner = values['reconcile-scaling-rows'];
        reconcileScaling = await benchReconcileScaling(server, {
          quick,
          rowsPerPartner: perPartner === undefined ? undefined : Number(perPartner),
        });
      }
    }
  } finally {
    await server.stop();
  }
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cpus: cpus().length,
    memoryGb: round(totalmem() / 1024 ** 3, 1),
    node: process.version,
    postgres: `${server.version} (${server.kind})`,
    build: buildDigest(join(__dirname, '../src')),
  };
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify(toJson(ledger, candidates, scaling, reconcile, reconcileScaling, machine, quick))}\n`,
    );
  }
  const results = { started, machine, ledger, candidates, scaling, reconcile, reconcileScaling };
  const raw = join(tmpdir(), `intent-ledger-bench-${quick ? 'quick' : 'full'}.json`);
  writeFileSync(raw, JSON.stringify(results));
  log(`raw figures in ${raw} (re-render with --render ${raw})`);
  if (!quick && !values['no-write']) {
    writeResults(resultsFile, renderResults(results));
    log(`wrote ${resultsFile}`);
  }
}

function toJson(
  ledger: LedgerBenchResult | undefined,
  candidates: LedgerCandidatesResult | undefined,
  scaling: ScalingResult | undefined,
  reconcile: ReconcileBenchResult | undefined,
  reconcileScaling: ReconcileScalingResult | undefined,
  machine: Record<string, unknown>,
  quick: boolean,
) {
  return {
    quick,
    machine,
    ledger: ledger && {
      ratio: ledger.ratio,
      p99AddedMs: ledger.p99AddedMs,
      targetsMet: Object.values(ledger.targets).every((target) => target.met),
      targets: ledger.targets,
      poolSize: ledger.poolSize,
      baselinePrepared: ledger.baselinePrepared,
      concurrency: ledger.concurrency.map((entry) => ({
        concurrency: entry.concurrency,
        ratio: entry.ratio,
        cpuRatio: entry.cpuRatio,
        ratioRange: entry.ratioRange,
        sqlRatio: entry.sqlRatio,
        p99AddedMs: entry.p99AddedMs,
        ledger: compact(entry.ledger),
        baseline: compact(entry.baseline),
        ledgerSql: compact(entry.ledgerSql),
      })),
      replay: ledger.replay.map((entry) => ({
        concurrency: entry.concurrency,
        ratio: entry.ratio,
        cpuRatio: entry.cpuRatio,
        p99AddedMs: entry.p99AddedMs,
        ledger: compact(entry.ledger),
        select: compact(entry.select),
      })),
      mixed: ledger.mixed.map((entry) => ({
        duplicateShare: entry.duplicateShare,
        adaptiveVsBest: entry.adaptiveVsBest,
        adaptiveCpuVsBest: entry.adaptiveCpuVsBest,
        adaptive: compact(entry.adaptive),
        insertFirst: compact(entry.insertFirst),
        readFirst: compact(entry.readFirst),
      })),
      scaling: scaling && {
        slotSeconds: scaling.slotSeconds,
        rounds: scaling.rounds,
        processes: scaling.entries,
      },
      candidates: candidates && {
        write: candidates.write.map((c) => ({ name: c.name, ratio: c.ratio, cpuRatio: c.cpuRatio })),
        replay: candidates.replay.map((c) => ({ name: c.name, ratio: c.ratio, cpuRatio: c.cpuRatio })),
      },
    },
    reconcile: reconcile && {
      references: reconcile.references,
      rows: reconcile.main.rows,
      seconds: reconcile.main.engine.seconds,
      rowsPerSecond: reconcile.main.engine.rowsPerSecond,
      floorSeconds: reconcile.main.floor.seconds,
      floorRatio: reconcile.main.floorRatio,
      durableFloorSeconds: reconcile.main.durableFloor.seconds,
      durableFloorRatio: reconcile.main.durableFloorRatio,
      peakRssMb: reconcile.main.engine.peakRssMb,
      smallRows: reconcile.small?.rows,
      smallPeakRssMb: reconcile.small?.engine.peakRssMb,
      memoryRatio: reconcile.memoryRatio,
      targetsMet: Object.values(reconcile.targets).every((target) => target.met),
      targets: reconcile.targets,
      history: reconcile.history,
      differences: reconcile.main.differences,
      engineWithoutTimeout: reconcile.main.engineWithoutTimeout && {
        seconds: reconcile.main.engineWithoutTimeout.seconds,
        rowsPerSecond: reconcile.main.engineWithoutTimeout.rowsPerSecond,
        floorRatio: reconcile.main.engineWithoutTimeout.floorRatio,
        peakRssMb: reconcile.main.engineWithoutTimeout.peakRssMb,
        exitCode: reconcile.main.engineWithoutTimeout.exitCode,
      },
      report: reconcile.main.engine.report && { ...reconcile.main.engine.report, rejected: undefined },
      scaling: reconcileScaling,
    },
  };
}

/**
 * sha256 (first 12 hex digits) of the compiled product the benchmark ran (every .js under src/ of this
 * build), so a figure can be tied to the code that produced it while the tree has uncommitted changes.
 */
function buildDigest(dir: string): string {
  const hash = createHash('sha256');
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.js')) hash.update(entry.name).update(readFileSync(path));
    }
  };
  walk(dir);
  return hash.digest('hex').slice(0, 12);
}

function compact(figures: VariantFigures) {
  return {
    opsPerSecond: figures.opsPerSecond,
    p50Ms: figures.p50Ms,
    p99Ms: figures.p99Ms,
    clientCpuUs: figures.clientCpuUs,
    serverCpuUs: figures.serverCpuUs,
    walBytes: figures.walBytes,
  };
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
