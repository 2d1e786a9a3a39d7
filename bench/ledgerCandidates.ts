/**
 * Candidate fixes for the ledger's hot path, measured beside the current SQL and the baseline in the same
 * run (concurrency 32, the target's). Nothing here changes the product: each candidate is the SQL the core
 * could send, sent through the ledger's own pool, so the figures say what a change in src/ledger/sql would buy
 * before anyone makes it, or what one already made bought.
 *
 * Write path (new key, no-op partner):
 * - `current`: claimIntent + completeAttempt as they are, as unnamed statements (parsed and planned each time).
 * - `prepared`: the same two statements as named (prepared) statements, as the product sends them.
 * - `prepared, fresh copies of the tables`: the same statements on new copies of both tables, as the schema
 *   has them (the product's own tables hold every earlier variant's rows; the copies below start empty too).
 * - `prepared, fresh copies, attempt row at claim and completion (before 0006)`: the statements as they were
 *   before migration 0006, on a second pair of copies: the claim also inserts the attempt row and the
 *   completion also updates it. What 0006 saved.
 * - `prepared, fresh copies, attempt row written at settle`: the alternative 0006 was measured against: the
 *   claim writes only the intent, the completion also inserts the finished attempt row.
 * - `prepared, lighter reconciliation indexes`: the current statements on a copy of `intents` whose
 *   (partner, partner_reference) index leaves out rows without one (every claim) and whose settled_at index
 *   is a BRIN (settled_at only grows, and a BRIN entry is a summary per block range, not one per row).
 * - `prepared, no reconciliation indexes`: on a copy of `intents` without the three indexes only
 *   reconciliation and retention read ((partner, reference), (partner, partner_reference), settled_at).
 * - `prepared, the claim reading first`: the other one-statement claim (a replay is one index probe).
 * - `prepared, the claim without the read (before #15)`: the claim as a bare insert, so the cost a new key
 *   pays for the claim that also reads the key (what makes a replay one statement) shows.
 *
 * Replay path (key already completed):
 * - `current`: the ledger's claim, which inserts and reads the key when the insert found it taken: one
 *   statement. `the claim reading first`: the other order, measured and not taken.
 * - `claim + find`: before #15, the insert alone (ON CONFLICT DO NOTHING: no lock, no WAL on a conflict) and
 *   then findIntent, unprepared and prepared.
 * - `find only, prepared`: the read alone, what the one statement costs beyond a SELECT.
 */
import { Pool, type QueryResult } from 'pg';
import { createLedger, poolOf } from '../src/ledger/createLedger.js';
import { claimNewIntent as claimIntent } from '../src/ledger/sql/claimIntent.js';
import { completeAttempt } from '../src/ledger/sql/completeAttempt.js';
import { findIntent } from './findIntent.js';
import {
  BASELINE_REPLAY,
  BASELINE_SCHEMA,
  baselineRun,
  captureStatement,
  claimInput,
  LEASE_MS,
  noopPartner,
  OWNER,
  PARTNER,
  silentLogger,
  specFor,
} from './ledger.js';
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

interface CandidateFigures {
  name: string;
  figures: VariantFigures;
  /** ops/s ÷ the reference's ops/s (baseline for writes, the single SELECT for replays). */
  ratio: number;
  cpuRatio: number | null;
}

/**
 * The other one-statement claim, measured and not taken: read first, insert only when the key is not there.
 * A replay is then one index probe; a new key pays the probe and the CTE around the insert.
 */
const CLAIM_READ_FIRST = `WITH existing AS (
       SELECT i.id, i.attempt, i.lease_expires_at, i.status, i.fingerprint, i.partner_honours_key,
              i.partner_reference, i.response, i.reason,
              coalesce(i.status = 'in_progress' AND i.lease_expires_at > now(), false) AS lease_running
         FROM intents i
        WHERE i.partner = $1 AND i.key = $3
     ), claimed AS (
       INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                            lease_expires_at, owner, partner_honours_key)
       SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::numeric, $7::text, 'in_progress', 1,
              now() + $8::float8 * interval '1 millisecond', $9::text, $10::boolean
        WHERE NOT EXISTS (SELECT 1 FROM existing)
       ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO NOTHING
       RETURNING id, attempt, lease_expires_at
     )
   SELECT true AS claimed, c.id, c.attempt, c.lease_expires_at, NULL::text AS status, NULL::text AS fingerprint,
          NULL::boolean AS partner_honours_key, NULL::text AS partner_reference, NULL::jsonb AS response,
          NULL::jsonb AS reason, true AS lease_running
     FROM claimed c
   UNION ALL
   SELECT false, e.* FROM existing e`;

/** The claim as it was before #15: the insert alone, so a replay needed a second statement to read the row. */
const CLAIM_WITHOUT_READ = `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                        lease_expires_at, owner, partner_honours_key)
   VALUES ($1, $2, $3, $4, $5, $6::numeric, $7, 'in_progress', 1, now() + $8 * interval '1 millisecond', $9, $10)
   ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO NOTHING
   RETURNING id, attempt, lease_expires_at`;

export interface LedgerCandidatesResult {
  concurrency: number;
  rounds: number;
  slotSeconds: number;
  write: CandidateFigures[];
  replay: CandidateFigures[];
}

/** The claim before migration 0006: it also inserted the attempt row. */
const CLAIM_BEFORE_0006 = `WITH claimed AS (
    INSERT INTO intents AS i (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                              lease_expires_at, owner, partner_honours_key)
    VALUES ($1, $2, $3, $4, $5, $6::numeric, $7, 'in_progress', 1, now() + $8 * interval '1 millisecond', $9, $10)
    ON CONFLICT ON CONSTRAINT intents_partner_key_unique DO NOTHING
    RETURNING i.id, i.attempt, i.lease_expires_at
  ), attempt AS (
    INSERT INTO intent_attempts (intent_id, attempt, owner, lease_expires_at)
    SELECT id, attempt, $9, lease_expires_at FROM claimed
  )
  SELECT id, attempt, lease_expires_at FROM claimed`;

/** The completion before migration 0006: it also updated the attempt row. */
const COMPLETE_BEFORE_0006 = `WITH done AS (
    UPDATE intents
       SET status = 'completed', partner_reference = $3, response = $4::jsonb, lease_expires_at = NULL,
           settled_at = now(), updated_at = now(), resolved_by = $5
     WHERE id = $1 AND status IN ('in_progress', 'unknown')
       AND (attempt = $2 OR (partner_honours_key AND attempt > $2))
     RETURNING id, attempt, partner_reference, response
  ), attempt AS (
    UPDATE intent_attempts
       SET outcome = 'completed', ended_at = now(), partner_reference = $3, response = $4::jsonb
     WHERE intent_id = $1 AND attempt = $2 AND (outcome IS NULL OR outcome = 'unknown')
       AND EXISTS (SELECT 1 FROM done)
  )
  SELECT * FROM done`;

/** The completion inserting the finished attempt row, from what the intent row says of the attempt. */
const COMPLETE_WITH_ATTEMPT_ROW = `WITH done AS (
    UPDATE intents
       SET status = 'completed', partner_reference = $3, response = $4::jsonb,
           settled_at = now(), updated_at = now(), resolved_by = $5
     WHERE id = $1 AND status IN ('in_progress', 'unknown')
       AND (attempt = $2 OR (partner_honours_key AND attempt > $2))
     RETURNING id, attempt, owner, attempt_started_at, lease_expires_at
  ), attempt AS (
    INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at, ended_at, outcome,
                                 partner_reference, response)
    SELECT id, $2, owner, attempt_started_at, lease_expires_at, now(), 'completed', $3, $4::jsonb FROM done
  )
  SELECT id, attempt FROM done`;

/**
 * Copies of the ledger's two tables with only the constraints and indexes the hot path itself reads: the
 * primary keys, unique (partner, key) for the claim, and the unsettled-lease index for stuck intents.
 */
const CANDIDATE_SCHEMA = [
  `CREATE TABLE cand_intents (LIKE intents INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS)`,
  'ALTER TABLE cand_intents ADD PRIMARY KEY (id)',
  'ALTER TABLE cand_intents ADD CONSTRAINT cand_intents_partner_key_unique UNIQUE (partner, key)',
  `CREATE INDEX cand_intents_unsettled ON cand_intents (partner, lease_expires_at)
     WHERE status IN ('in_progress', 'unknown')`,
  `CREATE TABLE cand_attempts (LIKE intent_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
  'ALTER TABLE cand_attempts ADD PRIMARY KEY (intent_id, attempt)',
];

/** The same, plus lighter forms of the three reconciliation indexes (tables `lite_intents`, `lite_attempts`). */
const LIGHTER_INDEX_SCHEMA = [
  ...CANDIDATE_SCHEMA.map((statement) => statement.replaceAll('cand_', 'lite_')),
  'CREATE INDEX lite_intents_reference ON lite_intents (partner, reference)',
  `CREATE INDEX lite_intents_partner_reference ON lite_intents (partner, partner_reference)
     WHERE partner_reference IS NOT NULL`,
  'CREATE INDEX lite_intents_settled_at ON lite_intents USING brin (settled_at)',
];

/** New copies of both tables as the schema has them (LIKE copies no foreign key), with table prefix `prefix`. */
const freshCopies = (prefix: string) => [
  `CREATE TABLE ${prefix}intents (LIKE intents INCLUDING ALL)`,
  `ALTER TABLE ${prefix}intents RENAME CONSTRAINT ${prefix}intents_partner_key_key TO ${prefix}intents_partner_key_unique`,
  `CREATE TABLE ${prefix}attempts (LIKE intent_attempts INCLUDING ALL)`,
];

/** Copies as the schema has them, one pair per variant that writes to copies: `copy_`, `old_`, `settle_`. */
const COPY_SCHEMA = [...freshCopies('copy_'), ...freshCopies('old_'), ...freshCopies('settle_')];

/** A statement of the ledger's, sent to the candidate tables (`cand_`, `lite_`, `copy_`, `old_`, `settle_`) instead. */
function onCandidateTables(text: string, prefix = 'cand_'): string {
  const out = text
    .replaceAll('intent_attempts', `${prefix}attempts`)
    .replaceAll('intents_partner_key_unique', `${prefix}intents_partner_key_unique`)
    .replace(/\bintents\b/g, `${prefix}intents`);
  if (out === text) throw new Error('a candidate statement does not name the ledger tables');
  return out;
}

export async function benchLedgerCandidates(
  server: BenchServer,
  options: { quick: boolean; poolSize?: number },
): Promise<LedgerCandidatesResult> {
  const poolSize = options.poolSize ?? 10;
  const concurrency = 32;
  const timing = options.quick
    ? { rounds: 3, slotMs: 400, warmupMs: 300 }
    : { rounds: 6, slotMs: 1_000, warmupMs: 700 };
  const database = await server.createDatabase('candidates');
  const ledger = await createLedger({
    databaseUrl: database.url,
    poolSize,
    leaseMs: LEASE_MS,
    owner: OWNER,
    logger: silentLogger,
  });
  const pool = poolOf(ledger.dataSource);
  const baselinePool = new Pool({ connectionString: database.url, max: poolSize });
  // Dropping the database at the end cuts connections the pool may still be closing: not a failure.
  baselinePool.on('error', () => undefined);
  const meter = await Meter.open(server);
  try {
    await baselinePool.query(BASELINE_SCHEMA);
    for (const statement of [...CANDIDATE_SCHEMA, ...LIGHTER_INDEX_SCHEMA, ...COPY_SCHEMA]) {
      await baselinePool.query(statement);
    }
    // claimIntent's parameters, in its order ($1..$10), for the candidates that keep its signature.
    const values = (key: string) => {
      const input = claimInput(specFor(key));
      return [
        input.partner,
        input.operation,
        input.key,
        input.fingerprint,
        input.reference,
        input.amount,
        input.currency,
        input.leaseMs,
        input.owner,
        input.partnerHonoursKey,
      ];
    };
    const claim = await captureStatement((db) => claimIntent(db, claimInput(specFor('x'))));
    const complete = await captureStatement((db) =>
      completeAttempt(db, {
        intentId: '0',
        attempt: 1,
        partnerReference: null,
        response: null,
        by: 'caller',
      }),
    );
    const find = await captureStatement((db) => findIntent(db, PARTNER, 'x'));
    if (JSON.stringify(claim.values) !== JSON.stringify(values('x'))) {
      throw new Error("claimIntent's parameters changed: update bench/ledgerCandidates.ts");
    }
    const send = (name: string | undefined, text: string, params: unknown[]): Promise<QueryResult> =>
      name ? pool.query({ name, text, values: params }) : pool.query(text, params);
    /** Claim + completion of a new key with the given statements; prepared when `tag` names them. */
    const writePath =
      (claimText: string, completeText: string, prepare: boolean, tag: string) =>
      (slot: number) =>
      async (n: number) => {
        const key = `${tag}-${slot}-${n}`;
        const claimed = await send(prepare ? `bench-${tag}-claim` : undefined, claimText, values(key));
        const row = claimed.rows[0] as { id: string; attempt: number } | undefined;
        if (!row) throw new Error(`${tag}: claim of ${key} returned nothing`);
        const done = await send(prepare ? `bench-${tag}-complete` : undefined, completeText, [
          row.id,
          row.attempt,
          `nsu-${key}`,
          null,
          'caller',
        ]);
        if (!done.rows[0]) throw new Error(`${tag}: completion of ${key} returned nothing`);
      };
    /** The ledger's own two statements, prepared, sent to candidate tables with `prefix` instead. */
    const onCopies = (prefix: string, tag: string) =>
      writePath(onCandidateTables(claim.text, prefix), onCandidateTables(complete.text, prefix), true, tag);
    const writeVariants: Variant[] = [
      { name: 'baseline', op: (slot) => (n) => baselineRun(baselinePool, `b-${slot}-${n}`) },
      { name: 'unprepared', op: writePath(claim.text, complete.text, false, 'cur') },
      { name: 'prepared', op: writePath(claim.text, complete.text, true, 'prep') },
      { name: 'prepared, fresh copies of the tables', op: onCopies('copy_', 'copy') },
      {
        name: 'prepared, fresh copies, attempt row at claim and completion (before 0006)',
        op: writePath(
          onCandidateTables(CLAIM_BEFORE_0006, 'old_'),
          onCandidateTables(COMPLETE_BEFORE_0006, 'old_'),
          true,
          'old',
        ),
      },
      {
        name: 'prepared, fresh copies, attempt row written at settle',
        op: writePath(
          onCandidateTables(claim.text, 'settle_'),
          onCandidateTables(COMPLETE_WITH_ATTEMPT_ROW, 'settle_'),
          true,
          'settle',
        ),
      },
      { name: 'prepared, lighter reconciliation indexes', op: onCopies('lite_', 'lite') },
      { name: 'prepared, no reconciliation indexes', op: onCopies('cand_', 'noidx') },
      {
        name: 'prepared, the claim reading first, inserting when the key is not there',
        op: writePath(CLAIM_READ_FIRST, complete.text, true, 'readfirst'),
      },
      {
        name: 'prepared, the claim without the read (before #15)',
        op: writePath(CLAIM_WITHOUT_READ, complete.text, true, 'noread'),
      },
    ];
    const write = ranked(
      await compareVariants(meter, writeVariants, { concurrency, ...timing }),
      'baseline',
      'candidates, write path',
    );

    const keys = Array.from({ length: 2_000 }, (_, i) => `replay-${i}`);
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(
        keys.slice(i, i + 50).map(async (key) => {
          await ledger.run(specFor(key), noopPartner(key));
          await baselineRun(baselinePool, key);
        }),
      );
    }
    /** Before #15: the claim finds the key taken (no row), then a second statement reads it. */
    const claimThenFind = (prepare: boolean, tag: string) => () => async (n: number) => {
      const key = keys[n % keys.length];
      const claimed = await send(prepare ? `bench-${tag}-claim` : undefined, CLAIM_WITHOUT_READ, values(key));
      if (claimed.rows[0]) throw new Error(`${tag}: replay of ${key} claimed it`);
      const found = await send(prepare ? `bench-${tag}-find` : undefined, find.text, [PARTNER, key]);
      if (found.rows[0]?.status !== 'completed') throw new Error(`${tag}: ${key} is not completed`);
    };
    const replayVariants: Variant[] = [
      {
        name: 'select',
        op: () => async (n) => {
          const { rows } = await baselinePool.query({
            name: 'bench-baseline-replay',
            text: BASELINE_REPLAY,
            values: [PARTNER, keys[n % keys.length]],
          });
          if (rows[0]?.status !== 'completed') throw new Error('baseline replay found no completed row');
        },
      },
      {
        name: 'current: the claim reads the key (one statement, prepared)',
        op: () => async (n) => {
          const key = keys[n % keys.length];
          const { rows } = await send('bench-rone-claim', claim.text, values(key));
          if (rows[0]?.claimed !== false || rows[0]?.status !== 'completed')
            throw new Error(`rone: replay of ${key} did not find it completed`);
        },
      },
      {
        name: 'the claim reading first (one statement, prepared)',
        op: () => async (n) => {
          const key = keys[n % keys.length];
          const { rows } = await send('bench-rread-claim', CLAIM_READ_FIRST, values(key));
          if (rows[0]?.claimed !== false || rows[0]?.status !== 'completed')
            throw new Error(`rread: replay of ${key} did not find it completed`);
        },
      },
      { name: 'claim + find, unprepared (before the prepared statements)', op: claimThenFind(false, 'rcur') },
      { name: 'claim + find, prepared (before #15)', op: claimThenFind(true, 'rclaim') },
      {
        name: 'find only, prepared',
        op: () => async (n) => {
          const key = keys[n % keys.length];
          const found = await send('bench-rfind-find', find.text, [PARTNER, key]);
          if (found.rows[0]?.status !== 'completed') throw new Error(`rfind: ${key} is not completed`);
        },
      },
    ];
    const replay = ranked(
      await compareVariants(meter, replayVariants, { concurrency, ...timing }),
      'select',
      'candidates, replay path',
    );
    return { concurrency, rounds: timing.rounds, slotSeconds: timing.slotMs / 1000, write, replay };
  } finally {
    await meter.close();
    await baselinePool.end();
    await ledger.close();
    await server.dropDatabase(database.name);
  }
}

function ranked(measured: Map<string, VariantFigures>, reference: string, label: string): CandidateFigures[] {
  const base = measured.get(reference)!;
  const out = [...measured].map(([name, figures]) => ({
    name,
    figures,
    ratio: round(figures.opsPerSecond / base.opsPerSecond, 3),
    cpuRatio: cpuRatio(base, figures),
  }));
  log(
    `${label} (c=32):\n${out
      .map(
        (c) =>
          `  ${c.name.padEnd(34)} ratio ${c.ratio}, CPU ratio ${c.cpuRatio}: ${describeFigures(c.figures)}`,
      )
      .join('\n')}`,
  );
  return out;
}
