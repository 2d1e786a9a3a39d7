/**
 * bench/ledger: what `ledger.run()` costs on the hot path, beside the least SQL that gives the same
 * guarantee, in the same run against the same database.
 *
 * Variants, each a closed loop of new keys with a no-op partner (it answers `{ partnerReference }` at once):
 * - `ledger`: `ledger.run()`, the product as users call it (no-op logger: we measure the ledger, not pino).
 * - `baseline`: hand-written `pg` on `bench_intents` (the columns the guarantee needs, unique (partner, key)):
 *   claim = `INSERT ... ON CONFLICT DO NOTHING RETURNING`, completion = `UPDATE ... WHERE id AND attempt AND
 *   status = 'in_progress'`. Two statements, two commits: the minimum for "one call in flight" + fencing.
 *   Both are named (prepared) statements, as the ledger's are: an unprepared baseline pays parsing and
 *   planning the ledger does not, and flattered the ratio by about a third.
 * - `ledger-sql`: the ledger's own two statements (`claimIntent`, `completeAttempt`) sent through the same
 *   pool without the `Ledger` class around them. ledger vs ledger-sql is the cost of the JavaScript
 *   (validation, fingerprint, lease timer, metrics); ledger-sql vs baseline is the cost of the SQL (attempt
 *   history, secondary indexes, CTEs).
 *
 * Replay: `run()` on keys already completed (the duplicate is suppressed and the stored result returned)
 * beside one prepared `SELECT` by (partner, key) on the baseline table.
 *
 * Fairness on a noisy 2-core machine: every variant gets the same pool size, the same database and the
 * same slot length; slots are interleaved (A B C, then B C A, ...), and a warm-up slot per variant runs
 * before any measured one. Figures are pooled over the rounds; the per-round ratio range shows the noise.
 */
import { createHash } from 'node:crypto';
import { Pool, type PoolClient, type QueryConfig } from 'pg';
import type { PreparedQueryable, Queryable } from '../src/database/queryable.js';
import { createLedger, poolOf } from '../src/ledger/createLedger.js';
import type { Ledger } from '../src/ledger/ledger.js';
import { claimNewIntent as claimIntent } from '../src/ledger/sql/claimIntent.js';
import { completeAttempt } from '../src/ledger/sql/completeAttempt.js';
import { readIntentByKey } from '../src/ledger/sql/readIntentByKey.js';
import type { Logger } from '../src/shared/logger.js';
import type { IntentSpec } from '../src/shared/types.js';
import { benchMixedDeliveries, type MixedFigures } from './ledgerMixed.js';
import {
  type BenchServer,
  compareVariants,
  cpuRatio,
  describeFigures,
  log,
  Meter,
  round,
  type Variant,
  type VariantFigures,
} from './support.js';

export const PARTNER = 'bench-pay';
export const LEASE_MS = 30_000;
export const OWNER = 'bench';

export interface LedgerBenchOptions {
  quick: boolean;
  /** Pool size of every variant. @default 10 (the ledger's default) */
  poolSize?: number;
}

interface ConcurrencyFigures {
  concurrency: number;
  ledger: VariantFigures;
  baseline: VariantFigures;
  ledgerSql: VariantFigures;
  /** ledger ops/s ÷ baseline ops/s, pooled over rounds. */
  ratio: number;
  /** Lowest and highest ratio of a single round (noise). */
  ratioRange: [number, number];
  /** ledger p99 − baseline p99. */
  p99AddedMs: number;
  /** ledger-sql ops/s ÷ baseline ops/s: what the SQL alone costs. */
  sqlRatio: number;
  /** baseline CPU per op ÷ ledger CPU per op (see {@link cpuRatio}). */
  cpuRatio: number | null;
}

interface ReplayFigures {
  concurrency: number;
  ledger: VariantFigures;
  select: VariantFigures;
  ratio: number;
  p99AddedMs: number;
  cpuRatio: number | null;
}

export interface LedgerBenchResult {
  poolSize: number;
  /** The baseline's statements are named (prepared) statements, like the ledger's. */
  baselinePrepared: true;
  slotSeconds: number;
  rounds: number;
  concurrency: ConcurrencyFigures[];
  replay: ReplayFigures[];
  /** New keys and duplicates mixed, per claim order (bench/ledgerMixed.ts). */
  mixed: MixedFigures[];
  /** The figures the targets are about (concurrency 32). */
  ratio: number;
  p99AddedMs: number;
  /** Each target of issue #15 with the figure it is about (printed, never asserted). */
  targets: {
    ratio: { value: number; target: number; met: boolean };
    p99AddedMs: { value: number; target: number; met: boolean };
    /** Replay at concurrency 32 ÷ a prepared single-row SELECT. */
    replayRatio: { value: number; target: number; met: boolean };
  };
  /** EXPLAIN (ANALYZE, BUFFERS, WAL) of the hot statements, one string per statement. */
  explain: { name: string; plan: string }[];
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

export const BASELINE_SCHEMA = `
  CREATE TABLE bench_intents (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partner           text NOT NULL,
    key               text NOT NULL,
    fingerprint       text NOT NULL,
    status            text NOT NULL,
    attempt           integer NOT NULL,
    lease_expires_at  timestamptz,
    partner_reference text,
    response          jsonb,
    settled_at        timestamptz,
    CONSTRAINT bench_intents_partner_key_unique UNIQUE (partner, key)
  )`;

const BASELINE_CLAIM = `
  INSERT INTO bench_intents (partner, key, fingerprint, status, attempt, lease_expires_at)
  VALUES ($1, $2, $3, 'in_progress', 1, now() + $4 * interval '1 millisecond')
  ON CONFLICT (partner, key) DO NOTHING
  RETURNING id, attempt`;

const BASELINE_COMPLETE = `
  UPDATE bench_intents
     SET status = 'completed', partner_reference = $3, response = $4::jsonb, lease_expires_at = NULL,
         settled_at = now()
   WHERE id = $1 AND attempt = $2 AND status = 'in_progress'`;

export const BASELINE_REPLAY = `
  SELECT status, fingerprint, partner_reference, response FROM bench_intents WHERE partner = $1 AND key = $2`;

export async function benchLedger(
  server: BenchServer,
  options: LedgerBenchOptions,
): Promise<LedgerBenchResult> {
  const poolSize = options.poolSize ?? 10;
  const quick = options.quick;
  const concurrencies = quick ? [1, 32] : [1, 8, 32, 64];
  const timing = quick
    ? { rounds: 4, slotMs: 500, warmupMs: 300 }
    : { rounds: 8, slotMs: 1_500, warmupMs: 1_000 };
  const replayConcurrencies = quick ? [32] : [1, 32];
  const replayTiming = { ...timing, slotMs: quick ? 400 : 1_000 };
  const replayKeys = quick ? 1_000 : 5_000;

  const database = await server.createDatabase('ledger');
  const ledger = await createLedger({
    databaseUrl: database.url,
    poolSize,
    leaseMs: LEASE_MS,
    owner: OWNER,
    logger: silentLogger,
  });
  const ledgerPool = poolOf(ledger.dataSource);
  const baselinePool = new Pool({ connectionString: database.url, max: poolSize });
  // Dropping the database at the end cuts connections the pool may still be closing: not a failure.
  baselinePool.on('error', () => undefined);
  const meter = await Meter.open(server);
  try {
    await baselinePool.query(BASELINE_SCHEMA);
    const variants = writeVariants(ledger, ledgerPool, baselinePool);
    const figures: ConcurrencyFigures[] = [];
    for (const concurrency of concurrencies) {
      const measured = await compareVariants(meter, variants, { concurrency, ...timing });
      const ledgerFigures = measured.get('ledger')!;
      const baseline = measured.get('baseline')!;
      const ledgerSql = measured.get('ledger-sql')!;
      const perRoundRatios = ledgerFigures.perRound.map((ops, r) => ops / baseline.perRound[r]);
      const entry: ConcurrencyFigures = {
        concurrency,
        ledger: ledgerFigures,
        baseline,
        ledgerSql,
        ratio: round(ledgerFigures.opsPerSecond / baseline.opsPerSecond, 3),
        ratioRange: [round(Math.min(...perRoundRatios), 3), round(Math.max(...perRoundRatios), 3)],
        p99AddedMs: round(ledgerFigures.p99Ms - baseline.p99Ms, 2),
        sqlRatio: round(ledgerSql.opsPerSecond / baseline.opsPerSecond, 3),
        cpuRatio: cpuRatio(baseline, ledgerFigures),
      };
      figures.push(entry);
      log(
        `ledger c=${concurrency}: ratio ${entry.ratio} (rounds ${entry.ratioRange.join('..')}), CPU ratio ` +
          `${entry.cpuRatio}, p99 added ${entry.p99AddedMs} ms\n  run():      ${describeFigures(ledgerFigures)}` +
          `\n  baseline:   ${describeFigures(baseline)}\n  ledger-sql: ${describeFigures(ledgerSql)}`,
      );
    }

    // Replay: keys completed once through each path, then asked again and again.
    const keys = Array.from({ length: replayKeys }, (_, i) => `replay-${i}`);
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(
        keys.slice(i, i + 50).map(async (key) => {
          await ledger.run(specFor(key), noopPartner(key));
          await baselineRun(baselinePool, key);
        }),
      );
    }
    const replayVariants: Variant[] = [
      {
        name: 'ledger',
        op: () => async (n) => {
          const key = keys[n % keys.length];
          const result = await ledger.run(specFor(key), noopPartner(key));
          if (!result.replayed) throw new Error(`replay of ${key} called the partner`);
        },
      },
      {
        name: 'select',
        op: () => async (n) => {
          const key = keys[n % keys.length];
          const { rows } = await baselinePool.query({
            name: 'bench_baseline_replay',
            text: BASELINE_REPLAY,
            values: [PARTNER, key],
          });
          if (rows[0]?.status !== 'completed')
            throw new Error(`baseline replay of ${key} found no completed row`);
        },
      },
    ];
    const replay: ReplayFigures[] = [];
    for (const concurrency of replayConcurrencies) {
      const measured = await compareVariants(meter, replayVariants, { concurrency, ...replayTiming });
      const ledgerFigures = measured.get('ledger')!;
      const select = measured.get('select')!;
      const entry: ReplayFigures = {
        concurrency,
        ledger: ledgerFigures,
        select,
        ratio: round(ledgerFigures.opsPerSecond / select.opsPerSecond, 3),
        p99AddedMs: round(ledgerFigures.p99Ms - select.p99Ms, 2),
        cpuRatio: cpuRatio(select, ledgerFigures),
      };
      replay.push(entry);
      log(
        `replay c=${concurrency}: ratio ${entry.ratio}, CPU ratio ${entry.cpuRatio}\n  run():  ` +
          `${describeFigures(ledgerFigures)}\n  select: ${describeFigures(select)}`,
      );
    }

    const mixed = await benchMixedDeliveries(meter, {
      open: (claimOrder) =>
        createLedger({
          databaseUrl: database.url,
          poolSize,
          leaseMs: LEASE_MS,
          owner: OWNER,
          logger: silentLogger,
          migrate: false,
          claimOrder,
        }),
      deliver: async (mixedLedger, key) => (await mixedLedger.run(specFor(key), noopPartner(key))).replayed,
      settledKeys: keys,
      shares: quick ? [0.5] : [0.25, 0.5, 0.75],
      timing,
    });

    const explain = await explainHotStatements(ledgerPool, baselinePool, keys[0]);
    const at32 = figures.find((entry) => entry.concurrency === 32)!;
    const replayAt32 = replay.find((entry) => entry.concurrency === 32)!;
    return {
      poolSize,
      baselinePrepared: true,
      slotSeconds: timing.slotMs / 1000,
      rounds: timing.rounds,
      concurrency: figures,
      replay,
      mixed,
      ratio: at32.ratio,
      p99AddedMs: at32.p99AddedMs,
      targets: {
        ratio: { value: at32.ratio, target: 0.9, met: at32.ratio >= 0.9 },
        p99AddedMs: { value: at32.p99AddedMs, target: 2, met: at32.p99AddedMs <= 2 },
        replayRatio: { value: replayAt32.ratio, target: 0.8, met: replayAt32.ratio >= 0.8 },
      },
      explain,
    };
  } finally {
    await meter.close();
    await baselinePool.end();
    await ledger.close();
    await server.dropDatabase(database.name);
  }
}

function writeVariants(ledger: Ledger, ledgerPool: Pool, baselinePool: Pool): Variant[] {
  return [
    {
      name: 'ledger',
      op: (slot) => async (n) => {
        const key = `l-${slot}-${n}`;
        const result = await ledger.run(specFor(key), noopPartner(key));
        if (result.replayed) throw new Error(`new key ${key} was replayed`);
      },
    },
    { name: 'baseline', op: (slot) => (n) => baselineRun(baselinePool, `b-${slot}-${n}`) },
    {
      name: 'ledger-sql',
      op: (slot) => async (n) => {
        const key = `s-${slot}-${n}`;
        const spec = specFor(key);
        const first = await claimIntent(ledgerPool, claimInput(spec));
        if (!first.claimed) throw new Error(`ledger-sql claim of ${key} claimed nothing`);
        const claimed = first.row;
        const completed = await completeAttempt(ledgerPool, {
          intentId: claimed.id,
          attempt: claimed.attempt,
          partnerReference: `nsu-${key}`,
          response: null,
          by: 'caller',
        });
        if (!completed) throw new Error(`ledger-sql completion of ${key} returned nothing`);
      },
    },
  ];
}

/**
 * The minimum: conditional insert, the call, conditional update; each a named (prepared) statement, as the
 * ledger sends its own, so the ratio compares SQL with SQL and not planning with no planning.
 */
export async function baselineRun(pool: Pool, key: string): Promise<void> {
  const payload = payloadFor(key);
  const print = createHash('sha256').update(JSON.stringify(payload)).digest('hex');
  const claimed = await pool.query<{ id: string; attempt: number }>({
    name: 'bench_baseline_claim',
    text: BASELINE_CLAIM,
    values: [PARTNER, key, print, LEASE_MS],
  });
  const row = claimed.rows[0];
  if (!row) throw new Error(`baseline claim of ${key} returned nothing`);
  const { partnerReference } = await noopPartner(key)();
  const completed = await pool.query({
    name: 'bench_baseline_complete',
    text: BASELINE_COMPLETE,
    values: [row.id, row.attempt, partnerReference, null],
  });
  if (completed.rowCount !== 1)
    throw new Error(`baseline completion of ${key} updated ${completed.rowCount} rows`);
}

function payloadFor(key: string) {
  return { order: key, amount: '10.00', currency: 'BRL' };
}

export function specFor(key: string): IntentSpec {
  return {
    partner: PARTNER,
    operation: 'charge',
    key,
    payload: payloadFor(key),
    reference: key,
    amount: '10.00',
    currency: 'BRL',
  };
}

export function claimInput(spec: IntentSpec) {
  return {
    partner: spec.partner,
    operation: spec.operation,
    key: spec.key,
    fingerprint: createHash('sha256').update(JSON.stringify(spec.payload)).digest('hex'),
    reference: spec.reference ?? null,
    amount: spec.amount ?? null,
    currency: spec.currency ?? null,
    leaseMs: LEASE_MS,
    owner: OWNER,
    partnerHonoursKey: false,
  };
}

export function noopPartner(key: string) {
  return async () => ({ partnerReference: `nsu-${key}` });
}

/** A Queryable that records the statement instead of running it: the core's SQL, verbatim. */
export function captureStatement(
  run: (db: Queryable & PreparedQueryable) => Promise<unknown>,
): Promise<{ text: string; values: unknown[] }> {
  return new Promise((resolve, reject) => {
    const recorder = {
      query(textOrConfig: string | QueryConfig, values?: unknown[]) {
        if (typeof textOrConfig === 'string') resolve({ text: textOrConfig, values: values ?? [] });
        else resolve({ text: textOrConfig.text, values: textOrConfig.values ?? [] });
        return Promise.resolve({ rows: [], rowCount: 0, command: '', oid: 0, fields: [] });
      },
    } as unknown as Queryable & PreparedQueryable;
    run(recorder).catch(reject);
  });
}

/**
 * EXPLAIN (ANALYZE, BUFFERS, WAL) of each hot statement, inside a transaction that is rolled back (ANALYZE
 * executes the writes). The ledger's statements are captured from src/ledger/sql so they are exactly what runs.
 */
async function explainHotStatements(
  ledgerPool: Pool,
  baselinePool: Pool,
  replayKey: string,
): Promise<{ name: string; plan: string }[]> {
  const claim = await captureStatement((db) => claimIntent(db, claimInput(specFor('explain-claim'))));
  const claimForComplete = await captureStatement((db) =>
    claimIntent(db, claimInput(specFor('explain-complete'))),
  );
  const complete = await captureStatement((db) =>
    completeAttempt(db, { intentId: '0', attempt: 1, partnerReference: 'nsu', response: null, by: 'caller' }),
  );
  const replayClaim = await captureStatement((db) => claimIntent(db, claimInput(specFor(replayKey))));
  const replayRead = await captureStatement((db) => readIntentByKey(db, PARTNER, replayKey));
  const out: { name: string; plan: string }[] = [];
  const explain = async (
    pool: Pool,
    name: string,
    text: string,
    values: unknown[] | ((client: PoolClient) => Promise<unknown[]>),
  ) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const bound = typeof values === 'function' ? await values(client) : values;
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) ${text}`, bound);
      out.push({ name, plan: renderPlan((rows[0] as { 'QUERY PLAN': unknown[] })['QUERY PLAN'][0]) });
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  };
  /** Claims for real inside the transaction, and binds the completion to what the claim returned. */
  const afterClaim =
    (claimText: string, claimValues: unknown[], rest: unknown[]) =>
    async (client: PoolClient): Promise<unknown[]> => {
      const { rows } = await client.query<{ id: string; attempt: number }>(claimText, claimValues);
      return [rows[0].id, rows[0].attempt, ...rest];
    };
  await explain(ledgerPool, 'ledger claim (claimIntent, new key)', claim.text, claim.values);
  await explain(
    ledgerPool,
    'ledger completion (completeAttempt)',
    complete.text,
    afterClaim(claimForComplete.text, claimForComplete.values, ['nsu-explain', null, 'caller']),
  );
  await explain(
    ledgerPool,
    'ledger replay: the claim on a completed key (reads it, inserts nothing)',
    replayClaim.text,
    replayClaim.values,
  );
  await explain(
    ledgerPool,
    'ledger replay: the plain read of the key (readIntentByKey, while duplicates dominate)',
    replayRead.text,
    replayRead.values,
  );
  await explain(baselinePool, 'baseline claim', BASELINE_CLAIM, [PARTNER, 'explain-b1', 'f', LEASE_MS]);
  await explain(
    baselinePool,
    'baseline completion',
    BASELINE_COMPLETE,
    afterClaim(BASELINE_CLAIM, [PARTNER, 'explain-b2', 'f', LEASE_MS], ['nsu-explain', null]),
  );
  await explain(baselinePool, 'baseline replay: select', BASELINE_REPLAY, [PARTNER, replayKey]);
  return out;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Total Time'?: number;
  'Actual Rows'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Shared Dirtied Blocks'?: number;
  'WAL Records'?: number;
  'WAL Bytes'?: number;
  Plans?: PlanNode[];
}

/** One line per node: type, relation/index, time, rows, buffers. */
function renderPlan(root: unknown): string {
  const top = root as { Plan: PlanNode; 'Planning Time': number; 'Execution Time': number };
  const lines: string[] = [];
  const walk = (node: PlanNode, depth: number) => {
    const on = node['Index Name'] ?? node['Relation Name'];
    lines.push(
      `${'  '.repeat(depth)}${node['Node Type']}${on ? ` on ${on}` : ''}` +
        ` time=${node['Actual Total Time']} ms rows=${node['Actual Rows']}` +
        ` hit=${node['Shared Hit Blocks'] ?? 0} read=${node['Shared Read Blocks'] ?? 0}` +
        ` dirtied=${node['Shared Dirtied Blocks'] ?? 0} wal=${node['WAL Records'] ?? 0} rec/${node['WAL Bytes'] ?? 0} B`,
    );
    for (const child of node.Plans ?? []) walk(child, depth + 1);
  };
  walk(top.Plan, 0);
  lines.push(`planning ${top['Planning Time']} ms, execution ${top['Execution Time']} ms`);
  return lines.join('\n');
}
