import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0008: a reconciliation run proves it is alive. `heartbeat_at` is refreshed by the run's process every
 * few seconds while it is `running` (src/reconcile/runHeartbeat.ts), and a run whose heartbeat is older than
 * the threshold is closed as `abandoned` by the next run of its partner (src/reconcile/sql/abandonStaleRuns.ts).
 *
 * Why: a run whose process was killed (SIGKILL, OOM, a lost machine) stayed `running` forever, and nothing
 * told an operator it had not happened. Nothing such a run did was applied: it works in one transaction,
 * committed together with its `succeeded` row, so only its run row needs closing.
 *
 * Runs still `running` from before this migration have no heartbeat; their start counts as one, so they are
 * closed by the first run that finds them older than the threshold. Stop every reconciling process of the
 * previous version first: it would not refresh the heartbeat and its live runs would be closed too.
 * The partial index keeps "this partner's running runs" a look-up however many runs are kept.
 */
export class RunHeartbeat1000000000008 implements MigrationInterface {
  name = 'RunHeartbeat1000000000008';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE reconciliation_runs ADD COLUMN heartbeat_at timestamptz');
    await queryRunner.query(`
      ALTER TABLE reconciliation_runs
        DROP CONSTRAINT reconciliation_runs_status_check,
        ADD CONSTRAINT reconciliation_runs_status_check
          CHECK (status IN ('running', 'succeeded', 'failed', 'dry_run', 'skipped', 'abandoned'))`);
    await queryRunner.query(
      `CREATE INDEX reconciliation_runs_running ON reconciliation_runs (partner) WHERE status = 'running'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX reconciliation_runs_running');
    // An abandoned run was a failed one that could not say so itself.
    await queryRunner.query(`UPDATE reconciliation_runs SET status = 'failed' WHERE status = 'abandoned'`);
    await queryRunner.query(`
      ALTER TABLE reconciliation_runs
        DROP CONSTRAINT reconciliation_runs_status_check,
        ADD CONSTRAINT reconciliation_runs_status_check
          CHECK (status IN ('running', 'succeeded', 'failed', 'dry_run', 'skipped'))`);
    await queryRunner.query('ALTER TABLE reconciliation_runs DROP COLUMN heartbeat_at');
  }
}
