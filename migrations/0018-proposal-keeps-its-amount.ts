import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0018: a four-eyes proposal remembers the amount at risk and the currency it was made on. An open
 * duplicate keeps up with the partner (a further execution raises its amount at risk, raiseFlags.ts), so a
 * second resolver approving "the proposal to dismiss" after that would apply one person's judgement of
 * 150.00 to 300.00 nobody looked at. Approval is refused when the discrepancy no longer has the proposal's
 * amount and currency (src/discrepancies/fourEyes.ts), and the reconciler withdraws the proposals of the
 * duplicates it grows. Proposals waiting when this runs take the amount their discrepancy has now: the
 * only one known.
 */
export class ProposalKeepsItsAmount1000000000018 implements MigrationInterface {
  name = 'ProposalKeepsItsAmount1000000000018';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE discrepancy_proposals ADD COLUMN amount_at_risk numeric, ADD COLUMN currency text',
    );
    await queryRunner.query(
      `UPDATE discrepancy_proposals p SET amount_at_risk = d.amount_at_risk, currency = d.currency
         FROM discrepancies d WHERE d.id = p.discrepancy_id`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE discrepancy_proposals DROP COLUMN amount_at_risk, DROP COLUMN currency',
    );
  }
}
