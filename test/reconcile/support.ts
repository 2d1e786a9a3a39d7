import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import type { LedgerOptions } from '../../src/ledger/options.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import { PartnerNotExecuted, PartnerRejected } from '../../src/shared/errors/index.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { type FreshDatabase, useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

/** A database, a ledger on it, a plain pool for assertions and a temp dir for report files, per suite. */
export interface Fixture {
  readonly db: FreshDatabase;
  ledger: Ledger;
  sql: Pool;
  dir: string;
}

export function useReconcileFixture(label: string, ledgerOptions: Partial<LedgerOptions> = {}): Fixture {
  const db = useFreshDatabase(label);
  const fixture = { db } as Fixture;
  before(async () => {
    fixture.ledger = await testLedger(db.url, { leaseMs: 30_000, ...ledgerOptions });
    fixture.sql = new Pool({ connectionString: db.url, max: 4 });
    fixture.dir = mkdtempSync(join(tmpdir(), `reconcile-${label}-`));
  });
  after(async () => {
    await fixture.ledger?.close();
    await fixture.sql?.end();
    if (fixture.dir) rmSync(fixture.dir, { recursive: true, force: true });
  });
  return fixture;
}

let counter = 0;
/** A partner name of its own, so tests sharing a database never see each other's intents. */
export function partnerName(name: string): string {
  return `${name}-${++counter}`;
}

/** An intent for `partner` with reference `ref`, 10.00 BRL unless told otherwise. */
export function spec(partner: string, ref: string, overrides: Partial<IntentSpec> = {}): IntentSpec {
  return {
    partner,
    operation: 'charge',
    key: `${ref}:charge`,
    payload: { ref },
    reference: ref,
    amount: '10.00',
    currency: 'BRL',
    ...overrides,
  };
}

/** The partner call reset mid-flight: the intent ends `unknown`. */
export async function unknownIntent(ledger: Ledger, intent: IntentSpec): Promise<string> {
  await expectRejection(
    ledger.run(intent, async () => {
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    }),
    'IntentOutcomeUnknownError',
  );
  return idOf(ledger, intent);
}

/** The worker died mid-call: claimed, never answered (`in_progress`; backdate its lease to make it stuck). */
export async function inProgressIntent(ledger: Ledger, intent: IntentSpec): Promise<string> {
  const claim = await ledger.begin(intent);
  if (claim.kind !== 'claimed') throw new Error('expected a claim');
  return claim.intentId;
}

export async function completedIntent(
  ledger: Ledger,
  intent: IntentSpec,
  partnerReference: string,
): Promise<string> {
  const result = await ledger.run(intent, async () => ({ partnerReference }));
  return result.intentId;
}

export async function notExecutedIntent(ledger: Ledger, intent: IntentSpec): Promise<string> {
  await expectRejection(
    ledger.run(intent, async () => {
      throw new PartnerNotExecuted('checked: never sent');
    }),
    'IntentNotExecutedError',
  );
  return idOf(ledger, intent);
}

export async function rejectedIntent(ledger: Ledger, intent: IntentSpec): Promise<string> {
  await expectRejection(
    ledger.run(intent, async () => {
      throw new PartnerRejected('card declined');
    }),
    'IntentRejectedError',
  );
  return idOf(ledger, intent);
}

async function idOf(ledger: Ledger, intent: IntentSpec): Promise<string> {
  const found = await ledger.get(intent.partner, intent.key);
  if (!found) throw new Error(`no intent for ${intent.key}`);
  return found.id;
}

async function expectRejection(promise: Promise<unknown>, name: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect((error as Error).name).to.equal(name);
    return;
  }
  expect.fail(`expected ${name}`);
}

/**
 * Moves an intent in time: its current attempt started at `startedAt`, it was created at `createdAt`
 * (default: when its attempt started), and, when unsettled, its lease ended an hour ago (stuck).
 */
export async function place(
  sql: Pool,
  intentId: string,
  at: { startedAt: Date; createdAt?: Date; leaseEndedAgo?: string },
): Promise<void> {
  await sql.query(
    `UPDATE intent_attempts a SET started_at = $2
       FROM intents i WHERE i.id = $1 AND a.intent_id = i.id AND a.attempt = i.attempt`,
    [intentId, at.startedAt],
  );
  await sql.query(
    `UPDATE intents SET created_at = $2, attempt_started_at = $4,
            lease_expires_at = CASE WHEN status IN ('unknown', 'in_progress') THEN now() - $3::interval
                                    ELSE lease_expires_at END
      WHERE id = $1`,
    [intentId, at.createdAt ?? at.startedAt, at.leaseEndedAgo ?? '1 hour', at.startedAt],
  );
}

export async function dbNow(sql: Pool): Promise<Date> {
  return (await sql.query<{ now: Date }>('SELECT now() AS now')).rows[0].now;
}

/** `base` plus a number of minutes (negative: earlier). */
export function minutes(base: Date, n: number): Date {
  return new Date(base.getTime() + n * 60_000);
}

export interface CsvRow {
  reference?: string;
  nsu?: string;
  amount: string;
  currency?: string;
  executedAt: Date | string;
}

const CSV_COLUMNS: CsvSourceConfig['columns'] = {
  reference: 'reference',
  partnerReference: 'nsu',
  amount: 'amount',
  currency: 'currency',
  executedAt: 'executed_at',
};

/** Writes a plain comma-separated report with ISO 8601 times; returns its path. */
export function writeCsv(dir: string, name: string, rows: readonly CsvRow[]): string {
  const lines = ['reference,nsu,amount,currency,executed_at'];
  for (const row of rows) {
    const at = row.executedAt instanceof Date ? row.executedAt.toISOString() : row.executedAt;
    lines.push([row.reference ?? '', row.nsu ?? '', row.amount, row.currency ?? 'BRL', at].join(','));
  }
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** Schedule and timings of the suites' reconcilers; the reports place intents relative to them. */
const RECONCILER_TIMINGS = {
  schedule: '*/15 * * * *',
  stuckAfter: '15m',
  settlementLag: '1h',
  deadline: '3d',
} as const;

/**
 * An API reconciler reading the loopback fake partner's listing (src/partnerFake/fakePartnerServer.ts):
 * `/v1/settlements` with its field names, cursor pagination, short timeouts and one quick retry. `source`
 * replaces any of the source's settings (`auth` is not set unless given), `overrides` any of the rest.
 */
export function fakePartnerReconciler(
  partner: string,
  source: Partial<ReconcilerApiSource> & { baseUrl: string },
  overrides: Partial<Omit<ReconcilerConfig, 'partner' | 'source'>> = {},
): ReconcilerConfig {
  return {
    partner,
    ...RECONCILER_TIMINGS,
    ...overrides,
    source: {
      type: 'api',
      path: '/v1/settlements',
      pagination: { type: 'cursor', limit: 100 },
      fields: {
        reference: 'reference',
        partnerReference: 'id',
        amount: 'amount',
        currency: 'currency',
        executedAt: 'executed_at',
      },
      timeoutMs: 2_000,
      retries: 1,
      retryBaseMs: 10,
      ...source,
    },
  };
}

export function csvReconciler(
  partner: string,
  path: string,
  overrides: Partial<ReconcilerConfig> = {},
): ReconcilerConfig {
  return {
    partner,
    ...RECONCILER_TIMINGS,
    source: { type: 'csv', path, columns: CSV_COLUMNS },
    ...overrides,
  };
}

/** Every table a run may change (except the run log itself), in a stable order, for before/after comparisons. */
export async function snapshot(sql: Pool): Promise<Record<string, unknown[]>> {
  const tables: Record<string, string> = {
    intents: 'SELECT * FROM intents ORDER BY id',
    intent_attempts: 'SELECT * FROM intent_attempts ORDER BY intent_id, attempt',
    discrepancies: 'SELECT * FROM discrepancies ORDER BY id',
    discrepancy_history: 'SELECT * FROM discrepancy_history ORDER BY id',
    partner_records: 'SELECT * FROM partner_records ORDER BY id',
  };
  const result: Record<string, unknown[]> = {};
  for (const [name, query] of Object.entries(tables)) {
    result[name] = JSON.parse(JSON.stringify((await sql.query(query)).rows));
  }
  return result;
}

export async function intentRow(sql: Pool, intentId: string) {
  const result = await sql.query(
    `SELECT i.status, i.attempt, i.partner_reference, i.resolved_by, i.settled_at, i.lease_expires_at,
            a.resolution, a.resolved_by AS attempt_resolved_by, a.resolved_at
       FROM intents i JOIN intent_attempt_history a ON a.intent_id = i.id AND a.attempt = i.attempt
      WHERE i.id = $1`,
    [intentId],
  );
  return result.rows[0];
}

/** Discrepancies of a partner as plain, comparable objects. */
export async function discrepanciesOf(sql: Pool, partner: string) {
  const result = await sql.query(
    `SELECT d.kind, d.intent_id, d.attempt, d.run_id, d.reference, d.partner_reference,
            d.amount_at_risk::text AS amount_at_risk, d.currency, d.summary, d.details, d.dedupe_key,
            d.partner_record_ids, d.status,
            (SELECT json_agg(json_build_object('to', h.to_status, 'actor', h.actor) ORDER BY h.id)
               FROM discrepancy_history h WHERE h.discrepancy_id = d.id) AS history
       FROM discrepancies d WHERE d.partner = $1 ORDER BY d.kind, d.intent_id NULLS FIRST, d.dedupe_key`,
    [partner],
  );
  return result.rows;
}

export function noDiscrepancies() {
  return {
    duplicate_execution: 0,
    amount_mismatch: 0,
    currency_mismatch: 0,
    missing_at_partner: 0,
    orphan_partner_record: 0,
    unresolved: 0,
    late_completion: 0,
    ambiguous_match: 0,
  };
}

/** The execution of `${ref}-seen` in {@link provenAbsent}'s report: a later report repeats it as the same row. */
export function seenRow(base: Date, ref = 'missed'): CsvRow {
  return { reference: `${ref}-seen`, nsu: `${ref}-S`, amount: '10.00', executedAt: minutes(base, 31) };
}

/**
 * Report 1 of the stories where a `not_executed` intent's execution turns up later (lateExecution,
 * earlierAttemptRows): intent `${ref}-seen`, attempt started at base + 30, executed ({@link seenRow}); intent
 * `ref`, attempt 1 started at base + 60, absent from a report whose coverage holds it, so proven
 * `not_executed`. Returns `ref`'s intent id.
 */
export async function provenAbsent(
  fx: Fixture,
  partner: string,
  at: { base: Date; coverage: { from: Date; to: Date } },
  ref = 'missed',
): Promise<string> {
  const seen = await unknownIntent(fx.ledger, spec(partner, `${ref}-seen`));
  await place(fx.sql, seen, { startedAt: minutes(at.base, 30) });
  const missed = await unknownIntent(fx.ledger, spec(partner, ref));
  await place(fx.sql, missed, { startedAt: minutes(at.base, 60) });
  const first = writeCsv(fx.dir, `${partner}-${ref}-1.csv`, [seenRow(at.base, ref)]);
  const [run] = await reconcile({
    pool: fx.sql,
    reconciler: csvReconciler(partner, first, { coverage: at.coverage }),
  });
  expect(run.resolved, String(run.error)).to.deep.equal({ completed: 1, notExecuted: 1 });
  return missed;
}
