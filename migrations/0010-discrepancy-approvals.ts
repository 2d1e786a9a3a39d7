import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0010: four eyes on big money. On a review site configured with an approval threshold, resolving or
 * dismissing a discrepancy whose amount at risk is above it is first a proposal, kept here until a second
 * resolver approves or rejects it (one pending proposal per discrepancy). The history records the proposal,
 * and then the approval or the rejection, each with its person and note; this table only holds what is
 * still waiting, so a row is deleted when it is decided.
 */
export class DiscrepancyApprovals1000000000010 implements MigrationInterface {
  name = 'DiscrepancyApprovals1000000000010';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE discrepancy_proposals (
        discrepancy_id bigint PRIMARY KEY REFERENCES discrepancies (id),
        action text NOT NULL CONSTRAINT discrepancy_proposals_action_check CHECK (action IN ('resolve', 'dismiss')),
        proposed_by text NOT NULL,
        note text NOT NULL,
        proposed_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE discrepancy_proposals');
  }
}
