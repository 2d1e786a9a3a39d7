import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0003: storing a settlement file's rows at the rate files arrive.
 *
 * A run stores every row of its report in `partner_records` with one INSERT ... SELECT. Each step below
 * (dropping ON CONFLICT, each foreign key, the reference index) cut that INSERT's time and WAL for a large
 * report; together they took it to a fraction of what it was. The table of measurements is in
 * docs/PERFORMANCE.md ("Staging and deciding a report", migration 0003).
 *
 * - The foreign keys are checked by a trigger per inserted row, each running a query. The one on `intent_id`
 *   also locks the referenced intent (FOR KEY SHARE), which writes a WAL record per row and dirties every
 *   page of `intents` that holds a matched intent. The one on `run_id` checks a million times that the same
 *   run row, committed before the report was read, still exists. Together they were most of a large run's
 *   time, more than the reconciliation target allows, so they are replaced by checks done once per report
 *   or per DELETE, which keep what the keys guaranteed:
 *   - a record's run exists: storePartnerRecords takes the run row FOR KEY SHARE once (the lock the foreign
 *     key took per row) before inserting with its id, and deleting a run that has records is refused by
 *     `reconciliation_runs_keep_records` (what NO ACTION did; nothing in the product deletes runs);
 *   - a record's intent existed when it was stored (the run matched it in the same transaction), and the
 *     link is cleared when the intent is deleted (what ON DELETE SET NULL did) by
 *     `intents_unlink_partner_records`, once per DELETE statement, through the partner_records_intent index.
 *     Before clearing, it takes the reconciliation lock of each partner whose intents are deleted (see
 *     src/reconcile/sql/lockPartnerReconciliation.ts): a run that matched one of them commits first, so its records
 *     are visible and cleared too, and a run starting later waits and no longer sees the deleted intents.
 *     The foreign key got the same effect by locking each matched intent row. One case now waits on both
 *     sides: a run raising a discrepancy for an intent that a concurrent purge is deleting (only settled
 *     intents without discrepancies are purged, so an old one the report shows again). PostgreSQL detects
 *     the deadlock after deadlock_timeout and cancels one of the two, which applies nothing; the purge
 *     batch or the run is simply done again later.
 * - `partner_records_reference` (partner, reference) goes: no statement of the product reads it, and because
 *   references arrive in no particular order each row was a random B-tree insert (the most expensive index
 *   of the table). Lookups go by identity (unique index), by intent
 *   (partner_records_intent) and by id.
 */
export class PartnerRecordsBulk1000000000003 implements MigrationInterface {
  name = 'PartnerRecordsBulk1000000000003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE partner_records DROP CONSTRAINT partner_records_run_id_fkey');
    await queryRunner.query('ALTER TABLE partner_records DROP CONSTRAINT partner_records_intent_id_fkey');
    await queryRunner.query('DROP INDEX partner_records_reference');

    await queryRunner.query(`
      CREATE FUNCTION reconciliation_runs_keep_records() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM partner_records WHERE run_id = OLD.id) THEN
          RAISE EXCEPTION 'reconciliation run % has partner records', OLD.id USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN OLD;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER reconciliation_runs_keep_records BEFORE DELETE ON reconciliation_runs
        FOR EACH ROW EXECUTE FUNCTION reconciliation_runs_keep_records()`);

    // The lock key is the one of src/reconcile/sql/lockPartnerReconciliation.ts. Partners in name order, so two
    // deletions spanning the same partners take their locks in the same order.
    await queryRunner.query(`
      CREATE FUNCTION intents_unlink_partner_records() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('intent-ledger:reconcile:' || p.partner, 0))
           FROM (SELECT DISTINCT partner FROM deleted_intents ORDER BY partner) p;
        UPDATE partner_records pr SET intent_id = NULL
          FROM deleted_intents d
         WHERE pr.intent_id = d.id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER intents_unlink_partner_records AFTER DELETE ON intents
        REFERENCING OLD TABLE AS deleted_intents
        FOR EACH STATEMENT EXECUTE FUNCTION intents_unlink_partner_records()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER intents_unlink_partner_records ON intents');
    await queryRunner.query('DROP FUNCTION intents_unlink_partner_records');
    await queryRunner.query('DROP TRIGGER reconciliation_runs_keep_records ON reconciliation_runs');
    await queryRunner.query('DROP FUNCTION reconciliation_runs_keep_records');
    await queryRunner.query('CREATE INDEX partner_records_reference ON partner_records (partner, reference)');
    await queryRunner.query(`
      ALTER TABLE partner_records
        ADD CONSTRAINT partner_records_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents (id) ON DELETE SET NULL`);
    await queryRunner.query(`
      ALTER TABLE partner_records
        ADD CONSTRAINT partner_records_run_id_fkey FOREIGN KEY (run_id) REFERENCES reconciliation_runs (id)`);
  }
}
