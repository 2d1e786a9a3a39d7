import { expect } from 'chai';
import type { Pool } from 'pg';
import { migrations } from '../../migrations/index.js';
import { createLedger } from '../../src/ledger/createLedger.js';
import { LedgerError } from '../../src/shared/errors/LedgerError.js';
import { SchemaTooNewError } from '../../src/shared/errors/SchemaTooNewError.js';
import { runCli } from '../support/cliProcess.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger } from '../support/testLedger.js';

/** What a newer version of the package would have recorded after migrating this database. */
const NEWER = 'SomethingFromTheFuture1000000000099';

describe('schema guard: a database migrated by a newer version is refused', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('schema_guard');
  let sql: Pool;

  before(async () => {
    sql = sqlPool(db.url);
    await sql.query('INSERT INTO migrations ("timestamp", name) VALUES ($1, $2)', [1000000000099, NEWER]);
  });
  after(async () => {
    await sql.end();
  });

  async function refusal(options: { migrate: boolean }): Promise<SchemaTooNewError> {
    const error = await createLedger({ databaseUrl: db.url, logger: capturingLogger(), ...options }).then(
      async (ledger) => {
        await ledger.close();
        return expect.fail('createLedger() opened a database a newer version migrated');
      },
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(SchemaTooNewError);
    return error as SchemaTooNewError;
  }

  it('createLedger() (migrating) refuses it, naming the newer migration, and applies nothing', async () => {
    const before = await sql.query('SELECT name FROM migrations ORDER BY id');
    const error = await refusal({ migrate: true });
    expect(error).to.be.instanceOf(LedgerError);
    expect(error.code).to.equal('SCHEMA_TOO_NEW');
    // It names the newest migration this build knows, whichever that is now.
    const newestKnown = new migrations[migrations.length - 1]().name as string;
    expect(error.message).to.include(NEWER).and.include(newestKnown);
    expect(error.unknownMigrations).to.deep.equal([NEWER]);
    const after = await sql.query('SELECT name FROM migrations ORDER BY id');
    expect(after.rows).to.deep.equal(before.rows);
  });

  it('createLedger({ migrate: false }) refuses it too', async () => {
    const error = await refusal({ migrate: false });
    expect(error.message).to.include(NEWER);
  });

  it('every CLI command refuses it: exit 1, naming the newer migration', async () => {
    for (const args of [
      ['migrate'],
      ['discrepancies'],
      ['discrepancy', '1'],
      ['purge', '--older-than', '30d'],
    ]) {
      const run = await runCli(args, { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
      expect(run.code, args.join(' ')).to.equal(1);
      expect(run.stderr, args.join(' ')).to.include(NEWER).and.include('newer version of intent-ledger');
    }
  });

  it('the same database without the newer row opens (the refusal is about that row)', async () => {
    await sql.query('DELETE FROM migrations WHERE name = $1', [NEWER]);
    const ledger = await createLedger({ databaseUrl: db.url, logger: capturingLogger() });
    await ledger.close();
  });
});
