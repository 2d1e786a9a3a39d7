import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0011: row kinds (docs/DESIGN.md, "Row kinds").
 *
 * A report row is an execution, a reversal (refund, chargeback), a failed try or an ignored line (fee,
 * payout, inbound message). `partner_records` keeps executions as before (`kind` defaults to `execution`,
 * so every record stored before keeps its meaning) and now also reversals and failed tries, each with the
 * intent it is about; a reversal also names the execution record it reverses (`reverses`, no foreign key,
 * for the reason migration 0003 gives). Only executions are evidence of an execution: every statement that
 * counts executions filters on `kind`. Ignored rows are never stored.
 *
 * `settlement_amount` / `settlement_currency` keep a report's other amount for a row (the settlement amount
 * when the presentment one is compared), as evidence only.
 *
 * `reconciliation_runs.rows_by_kind` keeps how many accepted rows of each kind a run read.
 */
export class RowKinds1000000000011 implements MigrationInterface {
  name = 'RowKinds1000000000011';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE partner_records
         ADD COLUMN kind text NOT NULL DEFAULT 'execution',
         ADD COLUMN reverses bigint,
         ADD COLUMN settlement_amount numeric,
         ADD COLUMN settlement_currency text,
         ADD CONSTRAINT partner_records_kind_check CHECK (kind IN ('execution', 'reversal', 'failed'))`,
    );
    await queryRunner.query(
      `ALTER TABLE reconciliation_runs ADD COLUMN rows_by_kind jsonb NOT NULL DEFAULT '{}'`,
    );
  }

  /** Fails while reversals or failed tries are stored, rather than letting them be read as executions. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const others = await queryRunner.query(
      `SELECT count(*)::int AS n FROM partner_records WHERE kind <> 'execution'`,
    );
    if (others[0].n > 0) {
      throw new Error(
        `cannot undo 0008: ${others[0].n} partner records are reversals or failed tries, which the previous schema would read as executions`,
      );
    }
    await queryRunner.query('ALTER TABLE reconciliation_runs DROP COLUMN rows_by_kind');
    await queryRunner.query(
      `ALTER TABLE partner_records DROP CONSTRAINT partner_records_kind_check, DROP COLUMN reverses, DROP COLUMN kind,
         DROP COLUMN settlement_amount, DROP COLUMN settlement_currency`,
    );
  }
}
