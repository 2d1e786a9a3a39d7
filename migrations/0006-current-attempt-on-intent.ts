import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0006: the attempt running now, or the one its caller completed, is described by the intent row itself;
 * `intent_attempts` keeps the other attempts. `intent_attempt_history` shows both as one history.
 *
 * Why: a claim wrote an attempt row and its completion updated it, two more writes (heap, index, WAL) on
 * the path of every partner call for a row that repeated the intent's own columns. bench/ledgerCandidates.ts
 * measures the ledger's two statements with and without them, on fresh copies of the tables with every
 * index, at concurrency 32: without them the ledger came close to the baseline's throughput
 * (docs/PERFORMANCE.md, "The attempt row is off the hot path").
 *
 * What each attempt's history keeps, and where:
 * - the current attempt: `intents.attempt`, `owner`, `attempt_started_at` (new here), `lease_expires_at` (now
 *   kept once the intent is settled: it is the attempt's lease; `Intent.leaseExpiresAt` still reads null then),
 *   and, once the caller completes it, `settled_at`, `partner_reference`, `response`.
 * - an attempt row is written as soon as the attempt ends any other way: rejected, not executed or unknown
 *   (by the caller), resolved by a reconciliation run, or left behind by a re-claim (its lease ended with no
 *   answer); and for the current attempt, without an outcome, when an older attempt's answer completes the
 *   intent (a partner that honours our key). A late answer updates the row, as before.
 * So an intent in progress never has a row for its current attempt: the rows written before this migration
 * for attempts still running are deleted (the intent row holds all they said). Other rows written before it
 * stay, and the view prefers a stored row to the intent's. Each statement that writes an attempt row does so
 * from the RETURNING of the statement that writes its intent, as 0005 requires.
 *
 * Upgrading: stop every process of the previous version (consumers and reconcilers) before this runs. An old
 * re-claim would not move `attempt_started_at`, and reconciliation now reads an attempt's start from it: the
 * trigger `intents_attempt_started` moves it whenever `attempt` changes, so such a start is never the previous
 * attempt's (migration 0014 drops it again: it made every UPDATE of an intent lock the row). What stays wrong with old writers running: an old claim writes a row for the running attempt,
 * which the history then shows without the outcome recorded on the intent. The table rewrite below holds an
 * exclusive lock on `intents` for as long as it takes, which grows with the table (docs/PERFORMANCE.md,
 * "The ledger's hot path", gives the time per million intents on the benchmark machine).
 */
export class CurrentAttemptOnIntent1000000000006 implements MigrationInterface {
  name = 'CurrentAttemptOnIntent1000000000006';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE intents ADD COLUMN attempt_started_at timestamptz');
    // Each current attempt's start, and its lease for the settled ones (the ledger used to clear it on
    // settling; a re-claim copies it into the row it leaves behind, a NOT NULL column).
    await queryRunner.query(`
      UPDATE intents i SET attempt_started_at = a.started_at,
                           lease_expires_at = coalesce(i.lease_expires_at, a.lease_expires_at)
        FROM intent_attempts a
       WHERE a.intent_id = i.id AND a.attempt = i.attempt`);
    // Only an intent written around the ledger lacks its attempt row: its creation for a first attempt, else
    // its last change, is the best guess (no lease is known: one ending at that start).
    await queryRunner.query(`
      UPDATE intents
         SET attempt_started_at = CASE WHEN attempt = 1 THEN created_at ELSE updated_at END,
             lease_expires_at = coalesce(lease_expires_at, CASE WHEN attempt = 1 THEN created_at ELSE updated_at END)
       WHERE attempt_started_at IS NULL`);
    // A running attempt is described by its intent row alone from now on (its completion then writes only
    // the intent): rows written for attempts still running move there, having nothing the intent lacks.
    await queryRunner.query(`
      DELETE FROM intent_attempts a
       USING intents i
       WHERE a.intent_id = i.id AND a.attempt = i.attempt AND i.status = 'in_progress'
         AND a.outcome IS NULL AND a.resolution IS NULL`);
    await queryRunner.query(`
      ALTER TABLE intents ALTER COLUMN attempt_started_at SET DEFAULT now(),
                          ALTER COLUMN attempt_started_at SET NOT NULL`);
    await queryRunner.query(`
      CREATE FUNCTION intents_attempt_started() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.attempt_started_at := now();
        RETURN NEW;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER intents_attempt_started BEFORE UPDATE OF attempt ON intents
        FOR EACH ROW WHEN (NEW.attempt IS DISTINCT FROM OLD.attempt)
        EXECUTE FUNCTION intents_attempt_started()`);
    await queryRunner.query(`
      CREATE VIEW intent_attempt_history AS
      SELECT a.intent_id, a.attempt, a.owner, a.started_at, a.lease_expires_at, a.ended_at, a.outcome,
             a.partner_reference, a.response, a.error, a.resolution, a.resolved_by, a.resolved_at
        FROM intent_attempts a
      UNION ALL
      SELECT i.id, i.attempt, i.owner, i.attempt_started_at, i.lease_expires_at,
             CASE WHEN i.status = 'completed' THEN i.settled_at END,
             CASE WHEN i.status = 'completed' THEN 'completed' END,
             CASE WHEN i.status = 'completed' THEN i.partner_reference END,
             CASE WHEN i.status = 'completed' THEN i.response END,
             NULL::jsonb, NULL::text, NULL::text, NULL::timestamptz
        FROM intents i
       WHERE NOT EXISTS (SELECT 1 FROM intent_attempts a WHERE a.intent_id = i.id AND a.attempt = i.attempt)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Before 0006 every attempt had its row, and a settled intent no lease: restore both.
    await queryRunner.query(`
      INSERT INTO intent_attempts (intent_id, attempt, owner, started_at, lease_expires_at, ended_at, outcome,
                                   partner_reference, response)
      SELECT h.intent_id, h.attempt, h.owner, h.started_at, coalesce(h.lease_expires_at, h.started_at), h.ended_at,
             h.outcome, h.partner_reference, h.response
        FROM intent_attempt_history h
       WHERE NOT EXISTS (SELECT 1 FROM intent_attempts a WHERE a.intent_id = h.intent_id AND a.attempt = h.attempt)`);
    await queryRunner.query(
      'UPDATE intents SET lease_expires_at = NULL WHERE settled_at IS NOT NULL AND lease_expires_at IS NOT NULL',
    );
    await queryRunner.query('DROP VIEW intent_attempt_history');
    await queryRunner.query('DROP TRIGGER intents_attempt_started ON intents');
    await queryRunner.query('DROP FUNCTION intents_attempt_started');
    await queryRunner.query('ALTER TABLE intents DROP COLUMN attempt_started_at');
  }
}
