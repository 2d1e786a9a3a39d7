import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0005: an attempt row's link to its intent is kept by the statements that write it, not by a foreign key.
 *
 * Every claim writes an attempt row, on the hot path of every partner call. Its foreign key ran a trigger per
 * row: a query locking the intent FOR KEY SHARE, which the claiming statement had just inserted or updated
 * (and so already held). `bench/ledgerCandidates.ts` measured the ledger's two statements with and without it
 * on copies of the tables, side by side, at concurrency 32: without it, more throughput, less server CPU and
 * less WAL per call in almost every run (docs/PERFORMANCE.md, "The ledger's hot path").
 *
 * What the key guaranteed, kept:
 * - an attempt's intent exists: attempt rows are inserted only in the statement that inserts or updates the
 *   intent (a CTE on its RETURNING), so an attempt is written only for an intent row that statement holds,
 *   and committed with it: by claimNewIntent and reclaimIntent here; since 0006, by reclaimIntent and the
 *   statements that settle an attempt (completeAttempt, settleAttemptWithoutExecution, resolveStuckIntents).
 * - deleting an intent deletes its attempts (what ON DELETE CASCADE did): `intents_delete_attempts`, a
 *   statement-level trigger, as 0003 does for the partner records of deleted intents. It is named to fire
 *   before `intents_unlink_partner_records`, where the cascade used to run too (row-level, before statement
 *   triggers). Truncating intents (which the key refused without CASCADE) empties the attempts too:
 *   `intents_truncate_attempts`, since TRUNCATE fires no delete trigger.
 */
export class AttemptsWithoutForeignKey1000000000005 implements MigrationInterface {
  name = 'AttemptsWithoutForeignKey1000000000005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE intent_attempts DROP CONSTRAINT intent_attempts_intent_id_fkey');
    await queryRunner.query(`
      CREATE FUNCTION intents_delete_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM intent_attempts a USING deleted_intents d WHERE a.intent_id = d.id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER intents_delete_attempts AFTER DELETE ON intents
        REFERENCING OLD TABLE AS deleted_intents
        FOR EACH STATEMENT EXECUTE FUNCTION intents_delete_attempts()`);
    await queryRunner.query(`
      CREATE FUNCTION intents_truncate_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- Every attempt has lost its intent. DELETE, not TRUNCATE: the TRUNCATE that fired this may name
        -- intent_attempts too, and PostgreSQL refuses to truncate a table that statement is still using.
        DELETE FROM intent_attempts;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER intents_truncate_attempts AFTER TRUNCATE ON intents
        FOR EACH STATEMENT EXECUTE FUNCTION intents_truncate_attempts()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER intents_truncate_attempts ON intents');
    await queryRunner.query('DROP FUNCTION intents_truncate_attempts');
    await queryRunner.query('DROP TRIGGER intents_delete_attempts ON intents');
    await queryRunner.query('DROP FUNCTION intents_delete_attempts');
    // The key cannot come back over attempts whose intent is gone (none, unless written around the ledger).
    await queryRunner.query(
      'DELETE FROM intent_attempts a WHERE NOT EXISTS (SELECT 1 FROM intents i WHERE i.id = a.intent_id)',
    );
    await queryRunner.query(`
      ALTER TABLE intent_attempts
        ADD CONSTRAINT intent_attempts_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents (id) ON DELETE CASCADE`);
  }
}
