import { expect } from 'chai';
import type { Pool } from 'pg';
import type { QueryRunner } from 'typeorm';
import { CurrentAttemptOnIntent1000000000006 } from '../../migrations/0006-current-attempt-on-intent.js';
import { NoRowTriggerOnIntents1000000000014 } from '../../migrations/0014-no-row-trigger-on-intents.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

/** The migration's up() and down() only send SQL: a pool stands in for TypeORM's query runner. */
function runnerOf(sql: Pool): QueryRunner {
  return { query: async (text: string) => (await sql.query(text)).rows } as unknown as QueryRunner;
}

const T1 = new Date('2026-11-01T10:00:00.000Z');
const T2 = new Date('2026-11-01T11:00:00.000Z');

/**
 * Migration 0006 over data the ledger wrote before it (every attempt with its row, a settled intent with no
 * lease), forward and back: nothing of any attempt's history is lost either way, and the ledger goes on
 * with rows written before the migration.
 */
describe('migration 0006: the current attempt on the intent row, over data written before it', function () {
  this.timeout(20_000);
  const db = useFreshDatabase('migration_0006');
  let sql: Pool;
  let ledger: Ledger | undefined;
  const migration = new CurrentAttemptOnIntent1000000000006();
  const ids: Record<'running' | 'completed' | 'bare', string> = { running: '', completed: '', bare: '' };

  before(async () => {
    sql = sqlPool(db.url);
    // The template is fully migrated: back to 0005's schema, through 0014 (which dropped 0006's trigger).
    await new NoRowTriggerOnIntents1000000000014().down(runnerOf(sql));
    await migration.down(runnerOf(sql));
  });
  after(async () => {
    await ledger?.close();
    await sql?.end();
  });

  it('up() takes each current attempt start from its row, moves running attempts to the intent, shows each once', async () => {
    const insert = async (key: string, status: string, lease: string | null, settled: string | null) =>
      (
        await sql.query<{ id: string }>(
          `INSERT INTO intents (partner, operation, key, fingerprint, status, attempt, lease_expires_at, owner,
                                partner_reference, settled_at, created_at, updated_at)
           VALUES ('acme-pay', 'charge', $1, 'fp-' || $1, $2, 1, $3::timestamptz, 'old-worker',
                   CASE WHEN $2 = 'completed' THEN 'NSU-OLD' END, $4::timestamptz, '2026-11-01T09:00:00Z',
                   '2026-11-01T12:00:00Z')
           RETURNING id`,
          [key, status, lease, settled],
        )
      ).rows[0].id;
    ids.running = await insert('running', 'in_progress', null, null);
    await sql.query(`UPDATE intents SET lease_expires_at = now() + interval '1 hour' WHERE id = $1`, [
      ids.running,
    ]);
    ids.completed = await insert('completed', 'completed', null, T2.toISOString());
    ids.bare = await insert('bare', 'completed', null, T2.toISOString());
    await sql.query(
      `INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at, ended_at, outcome,
                                    partner_reference)
       VALUES ($1, 1, 'old-worker', $3, now() + interval '1 hour', NULL, NULL, NULL),
              ($2, 1, 'old-worker', $4, $4::timestamptz + interval '30 seconds', $4::timestamptz + interval '1 second',
               'completed', 'NSU-OLD')`,
      [ids.running, ids.completed, T1, T2],
    );

    await migration.up(runnerOf(sql));

    const started = await sql.query<{ key: string; attempt_started_at: Date }>(
      'SELECT key, attempt_started_at FROM intents ORDER BY id',
    );
    expect(started.rows.map((r) => [r.key, r.attempt_started_at.toISOString()])).to.deep.equal([
      ['running', T1.toISOString()],
      ['completed', T2.toISOString()],
      ['bare', '2026-11-01T09:00:00.000Z'], // no attempt row (written around the ledger), attempt 1: created
    ]);
    // Settled intents get back their attempt's lease (the ledger used to clear it), or, with no row, none
    // known: one ending at the start.
    const leases = await sql.query<{ key: string; lease_expires_at: Date }>(
      "SELECT key, lease_expires_at FROM intents WHERE key IN ('completed', 'bare') ORDER BY id",
    );
    expect(leases.rows.map((r) => [r.key, r.lease_expires_at.toISOString()])).to.deep.equal([
      ['completed', new Date(T2.getTime() + 30_000).toISOString()],
      ['bare', '2026-11-01T09:00:00.000Z'],
    ]);
    const history = await sql.query(
      `SELECT i.key, h.attempt, h.outcome, h.partner_reference, h.started_at
         FROM intent_attempt_history h JOIN intents i ON i.id = h.intent_id ORDER BY i.id, h.attempt`,
    );
    expect(history.rows.map((r) => [r.key, r.attempt, r.outcome, r.partner_reference])).to.deep.equal([
      ['running', 1, null, null],
      ['completed', 1, 'completed', 'NSU-OLD'],
      ['bare', 1, 'completed', 'NSU-OLD'],
    ]);
    expect(history.rows[0].started_at.toISOString()).to.equal(T1.toISOString());
    // The running attempt's row said nothing its intent does not: it is gone; the settled one's stays.
    const stored = await sql.query('SELECT intent_id FROM intent_attempts ORDER BY intent_id');
    expect(stored.rows.map((r) => r.intent_id)).to.deep.equal([ids.completed]);
  });

  it('the ledger completes an attempt that was running across the migration, its start kept', async () => {
    ledger = await testLedger(db.url);
    const done = await ledger.complete(ids.running, 1, { partnerReference: 'NSU-NEW' });
    expect(done).to.include({ status: 'completed', replayed: false, attempt: 1 });
    const intent = await ledger.get('acme-pay', 'running');
    expect(intent?.leaseExpiresAt).to.equal(null);
    expect(intent?.attempts).to.have.length(1);
    expect(intent?.attempts[0]).to.include({ attempt: 1, outcome: 'completed', partnerReference: 'NSU-NEW' });
    expect(intent?.attempts[0].startedAt.toISOString()).to.equal(T1.toISOString());
  });

  it('a writer unaware of attempt_started_at (a previous version re-claiming) still moves it with the attempt', async () => {
    const before = await sql.query<{ attempt_started_at: Date; now: Date }>(
      "SELECT attempt_started_at, now() FROM intents WHERE key = 'bare'",
    );
    const moved = await sql.query<{ attempt: number; attempt_started_at: Date; now: Date }>(
      "UPDATE intents SET attempt = attempt + 1 WHERE key = 'bare' RETURNING attempt, attempt_started_at, now()",
    );
    expect(moved.rows[0].attempt).to.equal(2);
    expect(moved.rows[0].attempt_started_at.getTime()).to.equal(moved.rows[0].now.getTime());
    expect(moved.rows[0].attempt_started_at.getTime()).to.be.above(
      before.rows[0].attempt_started_at.getTime(),
    );
    // Statements that do not change the attempt leave its start alone.
    const kept = await sql.query<{ attempt_started_at: Date }>(
      "UPDATE intents SET updated_at = now() + interval '1 minute' WHERE key = 'bare' RETURNING attempt_started_at",
    );
    expect(kept.rows[0].attempt_started_at.getTime()).to.equal(moved.rows[0].attempt_started_at.getTime());
    await sql.query("UPDATE intents SET attempt = 1 WHERE key = 'bare'");
  });

  it('down() gives every attempt its row back and settled intents no lease, then drops the column and view', async () => {
    // An intent written the new way: completed by its caller, so described by the intent row alone.
    const fresh = await ledger!.run(
      { partner: 'acme-pay', operation: 'charge', key: 'new', payload: { n: 1 } },
      async () => ({ partnerReference: 'NSU-FRESH' }),
    );
    const freshRow = await sql.query(
      'SELECT attempt_started_at, lease_expires_at FROM intents WHERE id = $1',
      [fresh.intentId],
    );
    expect(
      (await sql.query('SELECT 1 FROM intent_attempts WHERE intent_id = $1', [fresh.intentId])).rowCount,
    ).to.equal(0);
    await ledger!.close();
    ledger = undefined;

    await migration.down(runnerOf(sql));

    const rows = await sql.query(
      `SELECT i.key, a.attempt, a.outcome, a.partner_reference, a.started_at, a.lease_expires_at, a.ended_at
         FROM intent_attempts a JOIN intents i ON i.id = a.intent_id ORDER BY i.id`,
    );
    expect(rows.rows.map((r) => [r.key, r.attempt, r.outcome, r.partner_reference])).to.deep.equal([
      ['running', 1, 'completed', 'NSU-NEW'],
      ['completed', 1, 'completed', 'NSU-OLD'],
      ['bare', 1, 'completed', 'NSU-OLD'],
      ['new', 1, 'completed', 'NSU-FRESH'],
    ]);
    const restored = rows.rows[3];
    expect(restored.started_at.getTime()).to.equal(freshRow.rows[0].attempt_started_at.getTime());
    expect(restored.lease_expires_at.getTime()).to.equal(freshRow.rows[0].lease_expires_at.getTime());
    expect(restored.ended_at).to.be.instanceOf(Date);
    const leases = await sql.query(
      'SELECT count(*)::int AS n FROM intents WHERE settled_at IS NOT NULL AND lease_expires_at IS NOT NULL',
    );
    expect(leases.rows[0].n).to.equal(0);
    const gone = await sql.query(
      `SELECT (SELECT count(*)::int FROM information_schema.columns
                WHERE table_name = 'intents' AND column_name = 'attempt_started_at') AS columns,
              (SELECT count(*)::int FROM information_schema.views WHERE table_name = 'intent_attempt_history') AS views`,
    );
    expect(gone.rows[0]).to.deep.equal({ columns: 0, views: 0 });
    // And up() again over what down() left: the schema is the current one once more for the next suites.
    await migration.up(runnerOf(sql));
  });
});
