import type { MigrationInterface, QueryRunner } from 'typeorm';

const KINDS_BEFORE = [
  'duplicate_execution',
  'amount_mismatch',
  'currency_mismatch',
  'missing_at_partner',
  'orphan_partner_record',
  'unresolved',
  'late_completion',
];

/**
 * 0007: the `ambiguous_match` discrepancy, and a run's warnings.
 *
 * A partner row that could be the execution of more than one intent (two intents with one reference, two
 * amount-matched intents close in time) is no longer given to one of them by a tie-break: the run resolves
 * none of them from it, proves none of them absent, and raises one `ambiguous_match` naming every candidate,
 * for a person to decide. The kind joins the CHECK constraint; down() fails while such discrepancies exist
 * (the old constraint cannot be added back) rather than deleting what finance may be working through.
 *
 * `reconciliation_runs.warnings` keeps why a run proved less than it could (no declared coverage, a report
 * that does not look like the partner's), so the run card says it after the command's output is gone.
 */
export class AmbiguousMatch1000000000007 implements MigrationInterface {
  name = 'AmbiguousMatch1000000000007';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_kind_check');
    await queryRunner.query(
      `ALTER TABLE discrepancies ADD CONSTRAINT discrepancies_kind_check
         CHECK (kind IN (${[...KINDS_BEFORE, 'ambiguous_match'].map((kind) => `'${kind}'`).join(', ')}))`,
    );
    await queryRunner.query(
      `ALTER TABLE reconciliation_runs ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE reconciliation_runs DROP COLUMN warnings');
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_kind_check');
    await queryRunner.query(
      `ALTER TABLE discrepancies ADD CONSTRAINT discrepancies_kind_check
         CHECK (kind IN (${KINDS_BEFORE.map((kind) => `'${kind}'`).join(', ')}))`,
    );
  }
}
