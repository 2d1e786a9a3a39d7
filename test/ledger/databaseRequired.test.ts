import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createLedger } from '../../src/ledger/createLedger.js';
import { DatabaseNotConfiguredError } from '../../src/shared/errors/DatabaseNotConfiguredError.js';
import { LedgerError } from '../../src/shared/errors/LedgerError.js';
import { capturingLogger } from '../support/testLedger.js';

/**
 * A consumer's process with no database named must not get a private one: in production each pod would get
 * its own dedup store. Run from a scratch directory outside the repository, as a consumer's folder.
 */
describe('createLedger needs a database named (or an explicit embedded opt-in)', function () {
  this.timeout(120_000);
  const startedIn = process.cwd();
  const savedUrl = process.env.DATABASE_URL;
  let scratch: string;

  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), 'intent-ledger-consumer-'));
    // As root the embedded server runs as `postgres`, which must be able to enter the directory.
    chmodSync(scratch, 0o755);
    delete process.env.DATABASE_URL;
    process.chdir(scratch);
  });
  afterEach(() => {
    process.chdir(startedIn);
    if (savedUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = savedUrl;
    rmSync(scratch, { recursive: true, force: true });
  });

  it('without databaseUrl, DATABASE_URL or embedded: throws DATABASE_NOT_CONFIGURED naming DATABASE_URL, creates nothing', async () => {
    const error = await createLedger({ logger: capturingLogger() }).then(
      () => expect.fail('createLedger() opened a database nobody named'),
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(DatabaseNotConfiguredError);
    expect(error).to.be.instanceOf(LedgerError);
    expect(error).to.include({ code: 'DATABASE_NOT_CONFIGURED', name: 'DatabaseNotConfiguredError' });
    expect((error as Error).message)
      .to.include('DATABASE_URL')
      .and.include('embedded: true');
    expect(existsSync(join(scratch, '.data'))).to.equal(false);
    expect(readdirSync(scratch)).to.deep.equal([]);
  });

  it('embedded: false is the same refusal', async () => {
    const error = await createLedger({ embedded: false, logger: capturingLogger() }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(DatabaseNotConfiguredError);
    expect(readdirSync(scratch)).to.deep.equal([]);
  });

  it('embedded: true opts in: a private server under ./.data/postgres that records a call', async () => {
    const ledger = await createLedger({ embedded: true, logger: capturingLogger() });
    try {
      const result = await ledger.run(
        { partner: 'acme-pay', operation: 'charge', key: 'order-1:charge', payload: { amount: '1.00' } },
        async () => ({ response: { ok: true }, partnerReference: 'nsu-1' }),
      );
      expect(result).to.include({ status: 'completed', replayed: false, partnerReference: 'nsu-1' });
      expect(existsSync(join(scratch, '.data', 'postgres', 'cluster', 'PG_VERSION'))).to.equal(true);
    } finally {
      await ledger.close();
    }
  });

  it('embedded: { dataDir } puts it where asked', async () => {
    const dataDir = join(scratch, 'elsewhere');
    const ledger = await createLedger({ embedded: { dataDir }, logger: capturingLogger() });
    await ledger.close();
    expect(existsSync(join(dataDir, 'cluster', 'PG_VERSION'))).to.equal(true);
    expect(existsSync(join(scratch, '.data'))).to.equal(false);
  });
});
