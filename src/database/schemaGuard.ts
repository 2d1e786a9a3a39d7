import type { DataSource, QueryRunner } from 'typeorm';
import { SchemaTooNewError } from '../shared/errors/SchemaTooNewError.js';

/** The name each migration of this build records in `migrations`, in order. */
export function knownMigrationNames(dataSource: DataSource): string[] {
  return dataSource.migrations.map((migration) => migration.name ?? migration.constructor.name);
}

/**
 * Throws {@link SchemaTooNewError} when `recorded` (the names in `migrations`) holds one this build does not
 * know: a newer version migrated the database. Rows are compared by name, not by count or timestamp, so a
 * newer migration is caught whatever number it has.
 */
export function refuseNewerSchema(recorded: string[], known: string[]): void {
  const knownNames = new Set(known);
  const unknown = recorded.filter((name) => !knownNames.has(name));
  if (unknown.length > 0)
    throw new SchemaTooNewError({ unknownMigrations: unknown, newestKnown: known.at(-1) ?? '(none)' });
}

/**
 * The guard for a process that does not migrate (`migrate: false`, read-only commands): reads what
 * `migrations` records, when the table exists, and refuses a newer schema. `migrate()` applies the same
 * check under its lock.
 */
export async function assertSchemaNotNewer(dataSource: DataSource): Promise<void> {
  const queryRunner: QueryRunner = dataSource.createQueryRunner();
  try {
    const exists: { present: boolean }[] = await queryRunner.query(
      `SELECT to_regclass('migrations') IS NOT NULL AS present`,
    );
    if (!exists[0]?.present) return;
    const rows: { name: string }[] = await queryRunner.query('SELECT name FROM migrations ORDER BY id');
    refuseNewerSchema(
      rows.map((row) => row.name),
      knownMigrationNames(dataSource),
    );
  } finally {
    await queryRunner.release();
  }
}
