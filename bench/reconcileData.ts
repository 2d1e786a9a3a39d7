/**
 * The reconciliation benchmark's data: N intents of `acme-pay` (or of another partner speaking its dialect,
 * for bench/reconcileScaling.ts) in mixed states, written by PostgreSQL itself (`INSERT ... SELECT
 * generate_series`), and an N-row settlement file in the acme-pay dialect (Latin-1, `;`, decimal comma with
 * dot thousands, `dd/MM/yyyy HH:mm:ss` São Paulo time), streamed to disk. The file names no partner: the
 * ledger scopes references by partner, so one partner's file matches that partner's intents only.
 *
 * Every intent j (1..N) has a fate chosen by j % 1000, the same in SQL and in the file, so the expected
 * outcome of a run is known exactly (see {@link expectedOutcome}). Row slot j of the file belongs to intent j:
 *
 * | j % 1000  | intent                         | file row in slot j                         | expected           |
 * |-----------|--------------------------------|--------------------------------------------|--------------------|
 * | 0         | completed                      | a bad row (invalid amount or date)         | rejected row (its intent is not missing) |
 * | 1-919     | completed                      | matching row                               | matched            |
 * | 920-924   | completed                      | same reference, amount + 1,00              | amount_mismatch    |
 * | 925-929   | completed                      | an orphan (reference we never sent)        | missing_at_partner + orphan |
 * | 930-959   | unknown, lease ended           | matching row                               | resolved completed |
 * | 960-969   | in_progress, lease ended       | matching row                               | resolved completed |
 * | 970-974   | unknown, lease ended           | matching row (+ second row, next line)     | completed + duplicate_execution |
 * | 975-979   | unknown, lease ended           | the second row of intent j-5 (other NSU)   | resolved not_executed |
 * | 980-989   | in_progress, lease ended       | an orphan                                  | resolved not_executed + orphan |
 * | 990-999   | rejected                       | an orphan                                  | orphan             |
 *
 * So: 0.1% bad rows (under the 1% threshold), 6% stuck intents, 2.5% orphans, 0.5% duplicates and mismatches.
 *
 * The partner's references (the NSU column, the completed intents' `partner_reference`) count up with j by
 * default, as Cielo's NSU does within a day; with {@link ReferenceOrder} `random` they are 16 hex digits of
 * an md5 of j, as random as Stripe's or PayPal's ids. A row's identity starts with its partner reference, so
 * the order decides where each stored row lands in `partner_records`' unique identity index
 * (docs/PERFORMANCE.md, "Identity in a hash index, measured and left").
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Client } from 'pg';
import { brazilianAmount } from '../src/demo/writeSettlementFile.js';

export const PARTNER = 'acme-pay';

/** How the partner's references run: counting up with the intent (the default) or at random. */
export type ReferenceOrder = 'sequential' | 'random';

/** SQL: the partner reference of intent `g` (an integer expression), as {@link partnerReference} writes it. */
function partnerReferenceSql(order: ReferenceOrder, g: string): string {
  return order === 'random' ? `left(md5((${g})::text), 16)` : `lpad((${g})::text, 9, '0')`;
}

/** The partner reference of intent `k`, behind `prefix` (a second execution's, a walk-in's). */
function partnerReference(order: ReferenceOrder, prefix: string, k: number): string {
  return order === 'random'
    ? `${prefix}${createHash('md5').update(String(k)).digest('hex').slice(0, 16)}`
    : `${prefix}${String(k).padStart(9, '0')}`;
}

type Status = 'completed' | 'unknown' | 'in_progress' | 'rejected';
type RowKind = 'bad' | 'match' | 'mismatch' | 'orphan' | 'duplicate';

/** Fates by j % 1000: `[until (exclusive), intent status, what slot j of the file holds]`. */
const FATES: readonly [number, Status, RowKind][] = [
  [1, 'completed', 'bad'],
  [920, 'completed', 'match'],
  [925, 'completed', 'mismatch'],
  [930, 'completed', 'orphan'],
  [960, 'unknown', 'match'],
  [970, 'in_progress', 'match'],
  [975, 'unknown', 'match'],
  [980, 'unknown', 'duplicate'],
  [990, 'in_progress', 'orphan'],
  [1000, 'rejected', 'orphan'],
];

function fateOf(j: number): [Status, RowKind] {
  const r = j % 1000;
  for (const [until, status, row] of FATES) if (r < until) return [status, row];
  throw new Error('unreachable');
}

/** When the intents happened: spread evenly over `spanMs` from `from`. */
export interface Window {
  from: Date;
  spanMs: number;
}

/** The window used by the benchmark: the 24 hours ending 6 hours ago (every lease long ended). */
export function benchWindow(now = Date.now()): Window {
  const spanMs = 24 * 3_600_000;
  return { from: new Date(now - 6 * 3_600_000 - spanMs), spanMs };
}

function intentTimeMs(j: number, n: number, window: Window): number {
  return window.from.getTime() + Math.floor(((j - 1) * window.spanMs) / n);
}

/** Amount of intent j in cents: 10,00 to 5.009,99, so about 4 in 5 amounts have a thousands separator. */
function centsOf(j: number): number {
  return 1_000 + ((j * 7_919) % 500_000);
}

function decimalOf(cents: number): string {
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/**
 * Generates the N intents of `partner` and their attempt rows in two statements, then VACUUM ANALYZE and
 * CHECKPOINT. As the ledger writes them (migration 0006): an attempt completed by its caller or still in
 * progress is described by its intent row; one that ended otherwise has a row of its own.
 */
export async function generateIntents(
  client: Client,
  n: number,
  window: Window,
  partner: string = PARTNER,
  references: ReferenceOrder = 'sequential',
): Promise<void> {
  const statusCase = `CASE ${FATES.map(([until, status]) => `WHEN g % 1000 < ${until} THEN '${status}'`).join(' ')} END`;
  // One SQL expression per column, reading the fate computed once per row in the subquery.
  await client.query(
    `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                          lease_expires_at, owner, attempt_started_at, partner_reference, reason, resolved_by,
                          created_at, updated_at, settled_at)
     SELECT $1, 'charge', 'order-' || g || ':charge', md5(g::text), 'order-' || g,
            round((1000 + (g::bigint * 7919) % 500000)::numeric / 100, 2), 'BRL', status, 1,
            at + interval '30 seconds', 'bench', at,
            CASE WHEN status = 'completed' THEN ${partnerReferenceSql(references, 'g')} END,
            CASE WHEN status = 'rejected' THEN '{"message":"card declined"}'::jsonb END,
            CASE WHEN status IN ('completed', 'rejected') THEN 'caller' END,
            at, at + interval '1 second',
            CASE WHEN status IN ('completed', 'rejected') THEN at + interval '1 second' END
       FROM (SELECT g, ${statusCase} AS status,
                    $2::timestamptz + ((g - 1)::bigint * $3 / $4) * interval '1 millisecond' AS at
               FROM generate_series(1, $4::bigint) AS g) AS fate
      ORDER BY g`,
    [partner, window.from.toISOString(), window.spanMs, n],
  );
  await client.query(
    `INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at, ended_at, outcome,
                                  partner_reference, error)
     SELECT id, 1, 'bench', attempt_started_at, lease_expires_at,
            CASE status WHEN 'unknown' THEN lease_expires_at ELSE settled_at END,
            status, partner_reference,
            CASE status WHEN 'unknown' THEN '{"detail":"timeout"}'::jsonb
                        WHEN 'rejected' THEN '{"message":"card declined"}'::jsonb END
       FROM intents WHERE partner = $1 AND status IN ('unknown', 'rejected') AND key LIKE 'order-%' ORDER BY id`,
    [partner],
  );
  // What autovacuum would have done long before a nightly run: statistics and the visibility map.
  await client.query('VACUUM (ANALYZE) intents');
  await client.query('VACUUM (ANALYZE) intent_attempts');
  await client.query('CHECKPOINT');
}

/**
 * São Paulo local time. Brazil has had no daylight saving time since 2019, so the zone is a fixed UTC-3
 * for every date this benchmark writes; formatting by hand keeps 1M rows at a few seconds (luxon's
 * `toFormat` would dominate the file generation).
 */
function saoPaulo(ms: number): string {
  const d = new Date(ms - 3 * 3_600_000);
  const two = (value: number) => String(value).padStart(2, '0');
  return (
    `${two(d.getUTCDate())}/${two(d.getUTCMonth() + 1)}/${d.getUTCFullYear()} ` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`
  );
}

const BRANDS = ['VISA', 'MASTERCARD', 'ELO DÉBITO', 'VISA CRÉDITO'];

function rowFor(j: number, n: number, window: Window, references: ReferenceOrder): string {
  const [, kind] = fateOf(j);
  const at = (k: number, plusMs: number) => saoPaulo(intentTimeMs(k, n, window) + plusMs);
  const nsu = (prefix: string, k: number) => partnerReference(references, prefix, k);
  const brand = BRANDS[j % BRANDS.length];
  switch (kind) {
    case 'match':
      return `order-${j};${nsu('', j)};${brazilianAmount(decimalOf(centsOf(j)))};BRL;${at(j, 5_000)};${brand}`;
    case 'mismatch':
      return `order-${j};${nsu('', j)};${brazilianAmount(decimalOf(centsOf(j) + 100))};BRL;${at(j, 5_000)};${brand}`;
    case 'duplicate': {
      const k = j - 5;
      return `order-${k};${nsu('D', k)};${brazilianAmount(decimalOf(centsOf(k)))};BRL;${at(k, 65_000)};${brand}`;
    }
    case 'orphan':
      return `walk-in-${j};${nsu('W', j)};${brazilianAmount(decimalOf(centsOf(j)))};BRL;${at(j, 5_000)};${brand}`;
    case 'bad':
      // Alternately an amount and a date that cannot be read; still six cells, so COPY takes the line too.
      return (j / 1000) % 2 === 0
        ? `order-${j};${nsu('', j)};12,34,56;BRL;${at(j, 5_000)};${brand}`
        : `order-${j};${nsu('', j)};${brazilianAmount(decimalOf(centsOf(j)))};BRL;31/02/2026 10:00:00;${brand}`;
  }
}

/** Streams the N-row file (CRLF, Latin-1) to `path`; returns its size in bytes. */
export async function writePartnerCsv(
  path: string,
  n: number,
  window: Window,
  references: ReferenceOrder = 'sequential',
): Promise<number> {
  const out = createWriteStream(path, { mode: 0o644 });
  const batch: string[] = ['PEDIDO;NSU;VALOR;MOEDA;DATA;BANDEIRA'];
  for (let j = 1; j <= n; j++) {
    batch.push(rowFor(j, n, window, references));
    if (batch.length === 10_000 || j === n) {
      if (!out.write(Buffer.from(`${batch.join('\r\n')}\r\n`, 'latin1'))) await once(out, 'drain');
      batch.length = 0;
    }
  }
  out.end();
  await once(out, 'finish');
  return out.bytesWritten;
}

/** What a correct run over this data reports, counted from the same fates. */
export interface ExpectedOutcome {
  rowsRead: number;
  rowsRejected: number;
  /** Rows whose reference is one of our intents (what the floor's join finds, bad rows excluded). */
  matchedRows: number;
  resolvedCompleted: number;
  resolvedNotExecuted: number;
  discrepancies: {
    duplicate_execution: number;
    amount_mismatch: number;
    missing_at_partner: number;
    orphan_partner_record: number;
    unresolved: number;
  };
}

export function expectedOutcome(n: number): ExpectedOutcome {
  const expected: ExpectedOutcome = {
    rowsRead: n,
    rowsRejected: 0,
    matchedRows: 0,
    resolvedCompleted: 0,
    resolvedNotExecuted: 0,
    discrepancies: {
      duplicate_execution: 0,
      amount_mismatch: 0,
      missing_at_partner: 0,
      orphan_partner_record: 0,
      unresolved: 0,
    },
  };
  const d = expected.discrepancies;
  for (let j = 1; j <= n; j++) {
    const [status, row] = fateOf(j);
    if (row === 'bad') expected.rowsRejected++;
    if (row === 'match' || row === 'mismatch' || row === 'duplicate') expected.matchedRows++;
    if (row === 'mismatch') d.amount_mismatch++;
    if (row === 'orphan') d.orphan_partner_record++;
    // A bad row still names its intent: the intent is not absent, only its row unreadable.
    if (status === 'completed' && row === 'orphan') d.missing_at_partner++;
    if (status !== 'completed' && status !== 'rejected') {
      if (row === 'match') expected.resolvedCompleted++;
      else expected.resolvedNotExecuted++;
    }
    // The second row of intent j-5 sits in slot j (j % 1000 in 975..979).
    if (row === 'duplicate') d.duplicate_execution++;
  }
  return expected;
}

/**
 * `n` settled intents of history for `--history N`: the partner's earlier days, created in the 90 days
 * before the window (so outside every coverage the benchmark declares), settled long ago, and the records
 * earlier runs stored for them, as a ledger that has run for months holds them. 99% completed with their
 * execution on record in `partner_records`, 1% rejected (with their attempt rows). None is `not_executed`:
 * the planner's statistics then say what they say on a real ledger the moment a run marks thousands of
 * intents not executed, that there are (almost) none. Written before {@link generateIntents}, so history
 * has the lower ids, as it would; generateIntents' VACUUM ANALYZE covers these rows too.
 */
export async function generateHistory(
  client: Client,
  n: number,
  window: Window,
  references: ReferenceOrder = 'sequential',
): Promise<void> {
  if (n <= 0) return;
  const spanMs = 90 * 24 * 3_600_000;
  const from = new Date(window.from.getTime() - 24 * 3_600_000 - spanMs);
  await client.query(
    `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                          lease_expires_at, owner, attempt_started_at, partner_reference, reason, resolved_by,
                          created_at, updated_at, settled_at)
     SELECT $1, 'charge', 'history-' || g || ':charge', md5('h' || g), 'history-' || g,
            round((1000 + (g::bigint * 7919) % 500000)::numeric / 100, 2), 'BRL', status, 1,
            at + interval '30 seconds', 'bench', at,
            CASE WHEN status = 'completed' THEN 'H' || ${partnerReferenceSql(references, 'g')} END,
            CASE WHEN status = 'rejected' THEN '{"message":"card declined"}'::jsonb END,
            'caller', at, at + interval '1 second', at + interval '1 second'
       FROM (SELECT g, CASE WHEN g % 100 = 0 THEN 'rejected' ELSE 'completed' END AS status,
                    $2::timestamptz + ((g - 1)::bigint * $3 / $4) * interval '1 millisecond' AS at
               FROM generate_series(1, $4::bigint) AS g) AS fate
      ORDER BY g`,
    [PARTNER, from.toISOString(), spanMs, n],
  );
  await client.query(
    `INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at, ended_at, outcome, error)
     SELECT id, 1, 'bench', attempt_started_at, lease_expires_at, settled_at, status, reason
       FROM intents WHERE partner = $1 AND status = 'rejected' AND key LIKE 'history-%' ORDER BY id`,
    [PARTNER],
  );
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO reconciliation_runs (partner, trigger, source, status, started_at, finished_at)
     VALUES ($1, 'schedule', 'history', 'succeeded', $2, $2) RETURNING id`,
    [PARTNER, window.from.toISOString()],
  );
  await client.query(
    `INSERT INTO partner_records (partner, identity, run_id, line, reference, partner_reference, amount, currency,
                                  executed_at, intent_id, recorded_at)
     SELECT partner, partner_reference || '|' || reference || '#1', $2, row_number() OVER (ORDER BY id),
            reference, partner_reference, amount, currency, attempt_started_at + interval '5 seconds', id,
            settled_at + interval '1 day'
       FROM intents WHERE partner = $1 AND status = 'completed' AND key LIKE 'history-%' ORDER BY id`,
    [PARTNER, rows[0].id],
  );
  await client.query('VACUUM (ANALYZE) partner_records');
  await client.query('VACUUM (ANALYZE) reconciliation_runs');
}
