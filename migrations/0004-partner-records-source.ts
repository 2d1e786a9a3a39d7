import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0004: a partner record's source is its run's.
 *
 * Every record was stored by one run, with that run's source (the file path, or the partner API's address),
 * which `reconciliation_runs.source` already holds; repeated on each row it was a large part of the table
 * and of the bytes every run writes (docs/PERFORMANCE.md, "Staging and deciding a report"). Dropping a column rewrites nothing: rows stored before keep their bytes until the
 * table is rewritten (VACUUM FULL) or they are purged; rows stored after are smaller. Readers join the run
 * (`run_id`, which a run row cannot lose while it has records: see 0003). down() puts the column back,
 * filled from the runs.
 */
export class PartnerRecordsSource1000000000004 implements MigrationInterface {
  name = 'PartnerRecordsSource1000000000004';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE partner_records DROP COLUMN source');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE partner_records ADD COLUMN source text');
    await queryRunner.query(
      'UPDATE partner_records pr SET source = run.source FROM reconciliation_runs run WHERE run.id = pr.run_id',
    );
    await queryRunner.query('ALTER TABLE partner_records ALTER COLUMN source SET NOT NULL');
  }
}
