import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0016: the four-eyes threshold belongs to the ledger, not to one program that happens to read it. Until now
 * only a review site started with `approvalThreshold` asked for a second resolver; the CLI's `resolve` and a
 * program calling `reviewDiscrepancies()` resolved the same big discrepancy alone. The threshold now lives
 * here, per currency (`*` for every currency without its own), and a trigger refuses to resolve or dismiss a
 * discrepancy above it unless the transaction is applying a second resolver's approval
 * (`decideProposal` says so with the transaction-local setting `intent_ledger.approved_discrepancy`).
 *
 * The table is append-only: a change is a new row, a removed threshold a row with `threshold` NULL, so
 * finance can see who set which threshold when. The current threshold of a currency is its latest row.
 */
export class ApprovalThresholds1000000000016 implements MigrationInterface {
  name = 'ApprovalThresholds1000000000016';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE approval_thresholds (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        currency text NOT NULL CONSTRAINT approval_thresholds_currency_check
          CHECK (currency = '*' OR currency ~ '^[A-Z]{3}$'),
        threshold numeric CONSTRAINT approval_thresholds_threshold_check CHECK (threshold >= 0),
        set_by text NOT NULL,
        note text NOT NULL,
        set_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      'CREATE INDEX approval_thresholds_current ON approval_thresholds (currency, id DESC)',
    );
    // The threshold in force for a currency: its own latest row, else the latest '*' row; NULL when neither
    // is set (four eyes off for it). A cleared currency row (threshold NULL) falls back to '*'.
    await queryRunner.query(`
      CREATE FUNCTION approval_threshold_for(for_currency text) RETURNS numeric
      LANGUAGE sql STABLE AS $$
        SELECT coalesce(
          (SELECT threshold FROM approval_thresholds WHERE currency = upper(for_currency) ORDER BY id DESC LIMIT 1),
          (SELECT threshold FROM approval_thresholds WHERE currency = '*' ORDER BY id DESC LIMIT 1))
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION discrepancies_four_eyes() RETURNS trigger
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

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER discrepancies_four_eyes ON discrepancies');
    await queryRunner.query('DROP FUNCTION discrepancies_four_eyes()');
    await queryRunner.query('DROP FUNCTION approval_threshold_for(text)');
    await queryRunner.query('DROP TABLE approval_thresholds');
  }
}
