import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0020: a discrepancy's links to its intent and its run, and a history entry's link to its discrepancy, are
 * kept by the statements that write them and by checks on the deleting side, not by foreign keys.
 *
 * A reconciliation run raises all its discrepancies, and their first history entries, in one statement
 * (src/reconcile/raiseFlags.ts). Each of the three foreign keys ran a trigger per inserted row, a query
 * each: the one on `intent_id` locked the intent FOR KEY SHARE (a WAL record per row, and a dirtied page
 * of `intents` per flagged intent), the one on `run_id` checked that the run row the statement names
 * still existed, once per row, and the one on `discrepancy_history` locked the discrepancy the same
 * statement had just inserted. On a report that raises 40,000 discrepancies those triggers took about two
 * thirds of the statement (docs/PERFORMANCE.md, "Discrepancies without per-row foreign keys"), as the
 * foreign keys of `partner_records` did before migration 0003.
 *
 * What the keys guaranteed, kept:
 * - a discrepancy's intent exists and is not deleted under it:
 *   - a run raises discrepancies only for intents of its partner while it holds the partner's
 *     reconciliation lock (src/reconcile/sql/lockPartnerReconciliation.ts); deleting intents takes the
 *     reconciliation lock of each of their partners first and then refuses (as NO ACTION did) when a
 *     discrepancy names one of them (`intents_keep_discrepancies`). A purge that deleted an intent a run is
 *     flagging waits for the run's commit, then sees its discrepancy and fails, deleting nothing; a run that
 *     starts after a purge committed no longer sees the intent. The check reads what committed while the
 *     delete waited because it runs under READ COMMITTED, as `purge` does (a foreign key's check also sees it
 *     under REPEATABLE READ; a delete of intents at that level is the one case this does not cover). As
 *     before (migration 0003), a run that must update an intent the purge holds deadlocks with it, and
 *     PostgreSQL cancels one of the two;
 *   - the ledger raises a `late_completion` with one statement that takes the intent FOR KEY SHARE and fails
 *     when it is gone (src/discrepancies/sql/raiseDiscrepancy.ts): the lock the foreign key took, once.
 * - a discrepancy's run exists: raiseFlags takes the run row FOR KEY SHARE once before raising, as
 *   storePartnerRecords does for the records, and `reconciliation_runs_keep_records` now also refuses to
 *   delete a run that discrepancies name (nothing in the product deletes runs).
 * - a history entry's discrepancy exists: entries are written together with their discrepancy (raising it)
 *   or while the reviewer's statement holds it; nothing in the product deletes discrepancies, and deleting
 *   one that has history is refused (`discrepancies_keep_history`).
 * - TRUNCATE: the keys refused truncating intents, runs or discrepancies alone while rows named them. The
 *   AFTER TRUNCATE triggers refuse the same, after every table the statement names is emptied (so
 *   `TRUNCATE intents, discrepancies, ...` still works).
 *
 * `discrepancy_proposals` keeps its foreign key: a reviewer writes one row at a time.
 */
export class DiscrepanciesWithoutForeignKeys1000000000020 implements MigrationInterface {
  name = 'DiscrepanciesWithoutForeignKeys1000000000020';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_intent_id_fkey');
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_run_fk');
    await queryRunner.query(
      'ALTER TABLE discrepancy_history DROP CONSTRAINT discrepancy_history_discrepancy_id_fkey',
    );

    // The lock key is the one of src/reconcile/sql/lockPartnerReconciliation.ts, taken in partner name order
    // as intents_unlink_partner_records takes it (a transaction holds it once however often it is taken).
    await queryRunner.query(`
      CREATE FUNCTION intents_keep_discrepancies() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        named bigint;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('intent-ledger:reconcile:' || p.partner, 0))
           FROM (SELECT DISTINCT partner FROM deleted_intents ORDER BY partner) p;
        SELECT d.intent_id INTO named
          FROM discrepancies d JOIN deleted_intents x ON x.id = d.intent_id
         LIMIT 1;
        IF named IS NOT NULL THEN
          RAISE EXCEPTION 'intent % has discrepancies', named USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER intents_keep_discrepancies AFTER DELETE ON intents
        REFERENCING OLD TABLE AS deleted_intents
        FOR EACH STATEMENT EXECUTE FUNCTION intents_keep_discrepancies()`);

    await queryRunner.query(`
      CREATE FUNCTION discrepancies_keep_history() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        named bigint;
      BEGIN
        SELECT h.discrepancy_id INTO named
          FROM discrepancy_history h JOIN deleted_discrepancies x ON x.id = h.discrepancy_id
         LIMIT 1;
        IF named IS NOT NULL THEN
          RAISE EXCEPTION 'discrepancy % has history', named USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER discrepancies_keep_history AFTER DELETE ON discrepancies
        REFERENCING OLD TABLE AS deleted_discrepancies
        FOR EACH STATEMENT EXECUTE FUNCTION discrepancies_keep_history()`);

    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION reconciliation_runs_keep_records() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM partner_records WHERE run_id = OLD.id) THEN
          RAISE EXCEPTION 'reconciliation run % has partner records', OLD.id USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF EXISTS (SELECT 1 FROM discrepancies WHERE run_id = OLD.id) THEN
          RAISE EXCEPTION 'reconciliation run % has discrepancies', OLD.id USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN OLD;
      END $$`);

    // After every table the TRUNCATE names is emptied: what is still named by a row was truncated alone.
    await queryRunner.query(`
      CREATE FUNCTION truncate_keeps_discrepancy_links() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (TG_TABLE_NAME = 'intents' AND EXISTS (SELECT 1 FROM discrepancies WHERE intent_id IS NOT NULL))
           OR (TG_TABLE_NAME = 'reconciliation_runs' AND EXISTS (SELECT 1 FROM discrepancies WHERE run_id IS NOT NULL))
           OR (TG_TABLE_NAME = 'discrepancies' AND EXISTS (SELECT 1 FROM discrepancy_history)) THEN
          RAISE EXCEPTION 'cannot truncate % alone: other rows name its rows (truncate them together)', TG_TABLE_NAME
            USING ERRCODE = 'feature_not_supported';
        END IF;
        RETURN NULL;
      END $$`);
    for (const table of ['intents', 'reconciliation_runs', 'discrepancies']) {
      await queryRunner.query(`
        CREATE TRIGGER ${table}_truncate_keeps_discrepancy_links AFTER TRUNCATE ON ${table}
          FOR EACH STATEMENT EXECUTE FUNCTION truncate_keeps_discrepancy_links()`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['intents', 'reconciliation_runs', 'discrepancies']) {
      await queryRunner.query(`DROP TRIGGER ${table}_truncate_keeps_discrepancy_links ON ${table}`);
    }
    await queryRunner.query('DROP FUNCTION truncate_keeps_discrepancy_links');
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION reconciliation_runs_keep_records() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM partner_records WHERE run_id = OLD.id) THEN
          RAISE EXCEPTION 'reconciliation run % has partner records', OLD.id USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN OLD;
      END $$`);
    await queryRunner.query('DROP TRIGGER discrepancies_keep_history ON discrepancies');
    await queryRunner.query('DROP FUNCTION discrepancies_keep_history');
    await queryRunner.query('DROP TRIGGER intents_keep_discrepancies ON intents');
    await queryRunner.query('DROP FUNCTION intents_keep_discrepancies');
    // The keys come back only over rows that satisfy them (none break them unless written around the product).
    await queryRunner.query(`
      ALTER TABLE discrepancy_history
        ADD CONSTRAINT discrepancy_history_discrepancy_id_fkey FOREIGN KEY (discrepancy_id) REFERENCES discrepancies (id)`);
    await queryRunner.query(`
      ALTER TABLE discrepancies
        ADD CONSTRAINT discrepancies_run_fk FOREIGN KEY (run_id) REFERENCES reconciliation_runs (id)`);
    await queryRunner.query(`
      ALTER TABLE discrepancies
        ADD CONSTRAINT discrepancies_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES intents (id)`);
  }
}
