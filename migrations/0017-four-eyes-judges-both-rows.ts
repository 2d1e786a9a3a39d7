import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0017: the four-eyes trigger (0016) judged a status change by the row as the UPDATE left it, and looked only
 * at UPDATEs naming `status`. A program's own SQL could therefore resolve a discrepancy above the threshold
 * alone by moving it under the bar in the same statement (`SET status = 'resolved', currency = 'JPY'`, whose
 * threshold is higher; `amount_at_risk = 0` or NULL) or in an earlier one. Now the trigger also fires on
 * `amount_at_risk` and `currency`, and without a second resolver's approval it refuses both: a status change
 * to resolved or dismissed when the row is above its threshold before or after, and taking a row that is
 * above it below it, whatever its status: zeroing a dismissed one, reopening it and resolving it alone would
 * otherwise turn two people's dismissal into one person's resolution (the reconciler only ever raises an
 * amount at risk, and nothing reopens a settled discrepancy).
 */
export class FourEyesJudgesBothRows1000000000017 implements MigrationInterface {
  name = 'FourEyesJudgesBothRows1000000000017';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER discrepancies_four_eyes ON discrepancies');
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION discrepancies_four_eyes() RETURNS trigger
      LANGUAGE plpgsql AS $$
      DECLARE
        was_big boolean := coalesce(abs(OLD.amount_at_risk) > approval_threshold_for(OLD.currency), false);
        is_big boolean := coalesce(abs(NEW.amount_at_risk) > approval_threshold_for(NEW.currency), false);
      BEGIN
        IF coalesce(current_setting('intent_ledger.approved_discrepancy', true), '') = NEW.id::text THEN
          RETURN NEW;
        END IF;
        IF NEW.status IN ('resolved', 'dismissed') AND NEW.status IS DISTINCT FROM OLD.status
           AND (was_big OR is_big)
        THEN
          RAISE EXCEPTION 'discrepancy % needs a second resolver''s approval: its amount at risk is above the approval threshold', NEW.id
            USING ERRCODE = 'IL001';
        END IF;
        IF was_big AND NOT is_big THEN
          RAISE EXCEPTION 'discrepancy % is above the approval threshold: its amount at risk or currency cannot take it below without a second resolver''s approval', NEW.id
            USING ERRCODE = 'IL001';
        END IF;
        RETURN NEW;
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER discrepancies_four_eyes BEFORE UPDATE OF status, amount_at_risk, currency ON discrepancies
        FOR EACH ROW EXECUTE FUNCTION discrepancies_four_eyes()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER discrepancies_four_eyes ON discrepancies');
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION discrepancies_four_eyes() RETURNS trigger
      LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.status IN ('resolved', 'dismissed')
           AND NEW.status IS DISTINCT FROM OLD.status
           AND abs(NEW.amount_at_risk) > approval_threshold_for(NEW.currency)
           AND coalesce(current_setting('intent_ledger.approved_discrepancy', true), '') <> NEW.id::text
        THEN
          RAISE EXCEPTION 'discrepancy % needs a second resolver''s approval: its amount at risk is above the approval threshold', NEW.id
            USING ERRCODE = 'IL001';
        END IF;
        RETURN NEW;
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER discrepancies_four_eyes BEFORE UPDATE OF status ON discrepancies
        FOR EACH ROW EXECUTE FUNCTION discrepancies_four_eyes()`);
  }
}
