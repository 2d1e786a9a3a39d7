/**
 * Mocha global fixtures: one PostgreSQL server for the whole run and a template database with the schema,
 * so each test file gets a fresh database by cloning it (fast) instead of migrating again.
 *
 * The server is the embedded PostgreSQL 18 (throwaway) unless TEST_DATABASE_URL points at another server,
 * whose user must be allowed to create databases (CI runs both).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createDataSource } from '../../src/database/createDataSource.js';
import { type EmbeddedServer, startEmbeddedPostgres } from '../../src/database/embeddedPostgres.js';
import { migrate } from '../../src/database/migrate.js';
import { withDatabase } from './databaseUrl.js';
import { admin, databasesToDrop } from './freshDatabase.js';

process.env.TZ = 'UTC';
process.env.LOG_LEVEL ??= 'silent';

let embedded: EmbeddedServer | undefined;
const templateName = `il_template_${process.pid}`;

export async function mochaGlobalSetup(): Promise<void> {
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    embedded = await startEmbeddedPostgres({
      dataDir: mkdtempSync(join(tmpdir(), 'intent-ledger-test-')),
      persistent: false,
    });
    adminUrl = embedded.url;
  }
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${templateName}`);
    await admin.query(`CREATE DATABASE ${templateName}`);
    const version = await admin.query<{ server_version: string }>('SHOW server_version');
    console.log(
      `  test database: PostgreSQL ${version.rows[0].server_version} (${embedded ? 'embedded' : 'TEST_DATABASE_URL'})`,
    );
  } finally {
    await admin.end();
  }
  const dataSource = createDataSource({ url: withDatabase(adminUrl, templateName), poolSize: 1 });
  await dataSource.initialize();
  await migrate(dataSource);
  if (process.env.IL_TEST_INTENTS_LAYOUT === 'partitioned') {
    // The opt-in layout of docs/SCALING.md, applied as an operator would after migrating, so that a run of
    // the ledger's tests shows the claim holds on it (IL_TEST_INTENTS_LAYOUT=partitioned npx mocha ...).
    const script = readFileSync(
      join(__dirname, '../../../migrations/optional/partition-intents-by-key.sql'),
      'utf8',
    );
    await dataSource.query(`BEGIN; ${script}; COMMIT`);
    console.log(
      '  intents layout: hash-partitioned by (partner, key) (migrations/optional/partition-intents-by-key.sql)',
    );
  }
  await dataSource.destroy();
  process.env.IL_TEST_ADMIN_URL = adminUrl;
  process.env.IL_TEST_TEMPLATE = templateName;
}

export async function mochaGlobalTeardown(): Promise<void> {
  if (embedded) {
    await embedded.stop();
    return;
  }
  const adminUrl = process.env.IL_TEST_ADMIN_URL as string;
  for (const name of [...databasesToDrop, templateName]) {
    await admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}
