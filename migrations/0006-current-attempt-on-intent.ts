import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0006: the attempt running now, or the one that completed the intent, is described by the intent row
 * itself; `intent_attempts` keeps every other attempt. `intent_attempt_history` shows both as one history.
 *
 * Why: a claim wrote an attempt row and its completion updated it, two more writes (heap, index, WAL) on
 * the path of every partner call for a row that repeated the intent's own columns. bench/ledgerCandidates.ts
 * measured the ledger's two statements without them, on fresh copies of the tables with every index, at
 * concurrency 32: 0.88 -> 1.06 of the baseline's throughput in the same run (docs/PERFORMANCE.md).
 *
 * What each attempt's history keeps, and where:
 * - the current attempt: `intents.attempt`, `owner`, `attempt_started_at` (new here), `lease_expires_at` (now
 *   kept once the intent is settled: it is the attempt's lease; `Intent.leaseExpiresAt` still reads null then),
 *   and, once the caller completes it, `settled_at`, `partner_reference`, `response`.
 * - an attempt row is written as soon as the attempt ends any other way: rejected, not executed or unknown
 *   (by the caller), resolved by a reconciliation run, or left behind by a re-claim (its lease ended with no
 *   answer). A late answer updates that row, as before.
 * So an intent in progress never has a row for its current attempt: the rows written before this migration
 * for attempts still running are deleted (the intent row holds all they said). Other rows written before it
 * stay as they are, and the view prefers a stored row to the intent's. Stop processes of the previous
 * version before migrating: one would still write a row at its claim, and the history would show that row
 * without the outcome the new version records on the intent. As
 * 0005 requires, each statement that writes an attempt row does so from the RETURNING of the statement that
 * writes its intent.
 */
export class CurrentAttemptOnIntent1000000000006 implements MigrationInterface {
  name = 'CurrentAttemptOnIntent1000000000006';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE intents ADD COLUMN attempt_started_at timestamptz');
    await queryRunner.query(`
      UPDATE intents i SET attempt_started_at = a.started_at
        FROM intent_attempts a
       WHERE a.intent_id = i.id AND a.attempt = i.attempt`);
    // Only an intent written around the ledger lacks its attempt row: its last change is the best guess.
    await queryRunner.query(
      'UPDATE intents SET attempt_started_at = updated_at WHERE attempt_started_at IS NULL',
    );
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
    await queryRunner.query('ALTER TABLE intents DROP COLUMN attempt_started_at');
  }
}
