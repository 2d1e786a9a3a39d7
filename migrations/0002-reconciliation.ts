import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0002: reconciliation.
 *
 * - `reconciliation_runs`: every run (scheduled, manual, dry) with its source, checksum, coverage, counts,
 *   timings and error. `UNIQUE (partner, slot)` is the election of scheduled runs: many workers try to insert
 *   the same (partner, slot) and exactly one succeeds (graphile-worker's cron does the same with its
 *   `known_crontabs`); manual runs have no slot.
 * - `partner_records`: every partner row ever reconciled, by its identity. A re-run of the same report finds
 *   its rows already here and raises nothing new for them.
 * - `discrepancies.run_id` now points at the run that raised it.
 */
export class Reconciliation1000000000002 implements MigrationInterface {
  name = 'Reconciliation1000000000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE reconciliation_runs (
        id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        partner               text NOT NULL,
        slot                  timestamptz,
        trigger               text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
        source                text NOT NULL,
        checksum              text,
        status                text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'dry_run', 'skipped')),
        coverage_from         timestamptz,
        coverage_to           timestamptz,
        rows_read             integer NOT NULL DEFAULT 0,
        rows_rejected         integer NOT NULL DEFAULT 0,
        matched               integer NOT NULL DEFAULT 0,
        resolved_completed    integer NOT NULL DEFAULT 0,
        resolved_not_executed integer NOT NULL DEFAULT 0,
        discrepancies         jsonb NOT NULL DEFAULT '{}',
        rejected              jsonb NOT NULL DEFAULT '[]',
        error                 text,
        owner                 text,
        started_at            timestamptz NOT NULL DEFAULT now(),
        finished_at           timestamptz,
        CONSTRAINT reconciliation_runs_slot_unique UNIQUE (partner, slot)
      )`);
    await queryRunner.query(
      "CREATE INDEX reconciliation_runs_checksum ON reconciliation_runs (partner, checksum) WHERE status = 'succeeded'",
    );
    await queryRunner.query(
      'CREATE INDEX reconciliation_runs_started ON reconciliation_runs (partner, started_at DESC)',
    );

    await queryRunner.query(`
      CREATE TABLE partner_records (
        id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        partner           text NOT NULL,
        identity          text NOT NULL,
        run_id            bigint NOT NULL REFERENCES reconciliation_runs (id),
        source            text NOT NULL,
        line              integer NOT NULL,
        reference         text,
        partner_reference text,
        amount            numeric,
        currency          text,
        executed_at       timestamptz,
        intent_id         bigint REFERENCES intents (id) ON DELETE SET NULL,
        recorded_at       timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT partner_records_identity_unique UNIQUE (partner, identity)
      )`);
    await queryRunner.query(
      'CREATE INDEX partner_records_intent ON partner_records (intent_id) WHERE intent_id IS NOT NULL',
    );
    await queryRunner.query('CREATE INDEX partner_records_reference ON partner_records (partner, reference)');

    await queryRunner.query(`
      ALTER TABLE discrepancies
        ADD CONSTRAINT discrepancies_run_fk FOREIGN KEY (run_id) REFERENCES reconciliation_runs (id)`);
    await queryRunner.query(
      "ALTER TABLE discrepancies ADD COLUMN partner_record_ids bigint[] NOT NULL DEFAULT '{}'",
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE discrepancies DROP COLUMN partner_record_ids');
    await queryRunner.query('ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_run_fk');
    await queryRunner.query('DROP TABLE partner_records');
    await queryRunner.query('DROP TABLE reconciliation_runs');
  }
}
