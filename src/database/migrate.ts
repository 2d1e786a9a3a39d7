import type { DataSource } from 'typeorm';
import { knownMigrationNames, refuseNewerSchema } from './schemaGuard.js';

/**
 * Advisory lock key serialising migrators. Any constant works as long as every process uses the same one;
 * this is the first 8 bytes of sha256('intent-ledger:migrations') read as a signed bigint.
 */
const MIGRATION_LOCK_KEY = '-3472906510348239218';

export interface MigrationReport {
  /** Names of the migrations this call applied, in order (empty when the schema was already current). */
  applied: string[];
}

/**
 * Refuses a database migrated by a newer version (`SchemaTooNewError`), then applies pending migrations in one transaction that first takes a transaction-scoped advisory lock.
 *
 * Why not TypeORM's `runMigrations()` alone: it reads the list of executed migrations before it opens its
 * transaction, so two processes starting at once both see the same pending list and the second fails
 * half-way. Here the lock is taken first and the list is read under it: the second process waits, then
 * sees nothing pending. The bookkeeping table is TypeORM's own (`migrations`), so
 * `typeorm migration:show -d dist/ormconfig.js` agrees with what this function did.
 */
export async function migrate(dataSource: DataSource): Promise<MigrationReport> {
  const queryRunner = dataSource.createQueryRunner();
  try {
    await queryRunner.connect();
    await queryRunner.startTransaction();
    try {
      await queryRunner.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
      await queryRunner.query(`
        CREATE TABLE IF NOT EXISTS migrations (
          id serial PRIMARY KEY,
          "timestamp" bigint NOT NULL,
          name character varying NOT NULL
        )`);
      const done: { name: string }[] = await queryRunner.query('SELECT name FROM migrations ORDER BY id');
      // A newer version migrated this database: applying ours beside its changes could damage them.
      refuseNewerSchema(
        done.map((row) => row.name),
        knownMigrationNames(dataSource),
      );
      const doneNames = new Set(done.map((row) => row.name));
      const applied: string[] = [];
      for (const migration of dataSource.migrations) {
        const name = migration.name ?? migration.constructor.name;
        if (doneNames.has(name)) continue;
        await migration.up(queryRunner);
        await queryRunner.query('INSERT INTO migrations ("timestamp", name) VALUES ($1, $2)', [
          Number(name.slice(-13)),
          name,
        ]);
        applied.push(name);
      }
      await queryRunner.commitTransaction();
      return { applied };
    } catch (error) {
      await queryRunner.rollbackTransaction();
      throw error;
    }
  } finally {
    await queryRunner.release();
  }
}
