import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0014: no BEFORE UPDATE row trigger on `intents`.
 *
 * Migration 0006 added `intents_attempt_started` (BEFORE UPDATE OF attempt, FOR EACH ROW) so that a writer of
 * a version before 0006, unaware of `attempt_started_at`, still moved it when it re-claimed. The trigger never
 * fires for a completion, but PostgreSQL locks the row before it looks at any BEFORE row trigger's columns or
 * WHEN clause (ExecBRUpdateTriggers fetches and locks the tuple first): every completion, every settlement
 * and every fenced UPDATE of a reconciliation run paid a tuple lock and a `Heap LOCK` WAL record for nothing
 * (docs/PERFORMANCE.md, "The ledger's hot path", has the figures).
 *
 * Every statement of this version that changes `attempt` sets `attempt_started_at` itself (the re-claim,
 * src/ledger/sql/reclaimIntent.ts). Upgrading: no process of a version before 0006 may run against this
 * schema, which 0006 already required (stop them before migrating).
 */
export class NoRowTriggerOnIntents1000000000014 implements MigrationInterface {
  name = 'NoRowTriggerOnIntents1000000000014';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER intents_attempt_started ON intents');
    await queryRunner.query('DROP FUNCTION intents_attempt_started()');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
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
  }
}
