import { expect } from 'chai';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { migrations } from '../../migrations/index.js';
import { createDataSource } from '../../src/database/createDataSource.js';
import { migrate } from '../../src/database/migrate.js';
import { createLedger } from '../../src/ledger/createLedger.js';
import { withDatabase } from '../support/databaseUrl.js';
import { admin, databasesToDrop } from '../support/freshDatabase.js';
import { capturingLogger } from '../support/testLedger.js';

const MIGRATORS = 6;
/** Every migration the package ships, by the name it records (the list grows; the test follows it). */
const ALL_MIGRATIONS = migrations.map((migration) => new migration().name as string);
/** The ledger core's own tables: later migrations may add more, never remove these. */
const CORE_TABLES = [
  'discrepancies',
  'discrepancy_history',
  'inbox',
  'intent_attempts',
  'intents',
  'migrations',
];

describe('migrations: many processes starting at once on an empty database', function () {
  this.timeout(20_000);
  let counter = 0;

  /** A brand-new EMPTY database (not cloned from the migrated template). */
  async function emptyDatabase(): Promise<string> {
    const adminUrl = process.env.IL_TEST_ADMIN_URL;
    if (!adminUrl) throw new Error('IL_TEST_ADMIN_URL is not set: run through mocha with test/support/setup');
    const name = `il_migrate_${process.pid}_${++counter}`;
    await admin(adminUrl, `CREATE DATABASE ${name}`);
    databasesToDrop.push(name);
    return withDatabase(adminUrl, name);
  }

  async function inspect(url: string) {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const migrations = await client.query(
        'SELECT name, count(*)::int AS times FROM migrations GROUP BY name ORDER BY name',
      );
      const tables = await client.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
      );
      return { migrations: migrations.rows, tables: tables.rows.map((r) => r.table_name) };
    } finally {
      await client.end();
    }
  }

  async function expectFullyMigratedOnce(url: string): Promise<void> {
    const { migrations: applied, tables } = await inspect(url);
    expect(applied).to.deep.equal([...ALL_MIGRATIONS].sort().map((name) => ({ name, times: 1 })));
    expect(tables).to.include.members(CORE_TABLES);
  }

  it(`${MIGRATORS} data sources (each its own pool) migrating at once: one applies, the others apply nothing`, async () => {
    const url = await emptyDatabase();
    const sources: DataSource[] = Array.from({ length: MIGRATORS }, () =>
      createDataSource({ url, poolSize: 2 }),
    );
    try {
      await Promise.all(sources.map((source) => source.initialize()));
      const reports = await Promise.all(sources.map((source) => migrate(source)));
      const applied = reports.map((report) => report.applied);
      expect(applied.filter((names) => names.length > 0)).to.deep.equal([ALL_MIGRATIONS]);
      expect(applied.filter((names) => names.length === 0)).to.have.length(MIGRATORS - 1);
      await expectFullyMigratedOnce(url);
      // Re-running applies nothing and changes nothing.
      const again = await Promise.all(sources.map((source) => migrate(source)));
      expect(again.map((report) => report.applied)).to.deep.equal(sources.map(() => []));
      await expectFullyMigratedOnce(url);
    } finally {
      await Promise.all(sources.filter((source) => source.isInitialized).map((source) => source.destroy()));
    }
  });

  it(`${MIGRATORS} ledgers created at once with migrate: true all open, and work on the one schema`, async () => {
    const url = await emptyDatabase();
    const ledgers = await Promise.all(
      Array.from({ length: MIGRATORS }, (_, i) =>
        createLedger({
          databaseUrl: url,
          migrate: true,
          poolSize: 2,
          owner: `m${i}`,
          logger: capturingLogger(),
        }),
      ),
    );
    try {
      await expectFullyMigratedOnce(url);
      let calls = 0;
      const spec = { partner: 'p', operation: 'o', key: 'after-migrate', payload: {} };
      const results = await Promise.allSettled(
        ledgers.map((ledger) => ledger.run(spec, async () => ({ partnerReference: String(++calls) }))),
      );
      expect(calls).to.equal(1);
      expect(results.filter((r) => r.status === 'fulfilled' && !r.value.replayed)).to.have.length(1);
    } finally {
      await Promise.all(ledgers.map((ledger) => ledger.close()));
    }
  });
});
