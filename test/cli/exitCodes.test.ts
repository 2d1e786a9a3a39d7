import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type CliRun, runCli } from '../support/cliProcess.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

/**
 * Every command's exit code on both databases a user can have: the embedded default (no DATABASE_URL; its
 * library installs an exit hook that used to turn every failure into 0) and DATABASE_URL. Each failure is
 * provoked on purpose; `migrate` is the success beside them, so a CLI that always exits 1 fails too.
 */
describe('CLI exit codes: 0 success, 1 failure, 2 usage (child processes)', function () {
  this.timeout(120_000);
  const db = useFreshDatabase('exit_codes');
  let embeddedDir: string;
  let taken: Server;
  let takenPort: number;

  before(async () => {
    // As root the embedded server runs as `postgres`, which must be able to enter the directory.
    embeddedDir = mkdtempSync(join(tmpdir(), 'intent-ledger-exit-codes-'));
    chmodSync(embeddedDir, 0o755);
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    takenPort = (taken.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
    rmSync(embeddedDir, { recursive: true, force: true });
  });

  const databases: { name: string; env: () => NodeJS.ProcessEnv }[] = [
    {
      name: 'the embedded default',
      env: () => ({ DATABASE_URL: undefined, INTENT_LEDGER_DATA_DIR: join(embeddedDir, 'postgres') }),
    },
    { name: 'DATABASE_URL', env: () => ({ DATABASE_URL: db.url, INTENT_LEDGER_DATA_DIR: undefined }) },
  ];

  for (const database of databases) {
    describe(`on ${database.name}`, () => {
      function cli(...args: string[]): Promise<CliRun> {
        return runCli(args, { ...database.env(), LOG_LEVEL: 'silent', REVIEW_TOKEN: undefined });
      }

      it('migrate succeeds: 0, saying on stderr when it falls back to the embedded server', async () => {
        const run = await cli('migrate');
        expect(run.code, run.stderr).to.equal(0);
        const notice = 'DATABASE_URL is not set: using the embedded PostgreSQL under';
        if (database.name === 'DATABASE_URL') expect(run.stderr).not.to.include(notice);
        else expect(run.stderr).to.include(`${notice} ${join(embeddedDir, 'postgres')}`);
      });

      it('reconcile of a file that does not exist: 1, naming the file', async () => {
        const missing = join(embeddedDir, 'no-such-report.csv');
        const run = await cli('reconcile', 'acme-pay', '--file', missing);
        expect(run.code, run.stdout + run.stderr).to.equal(1);
        expect(run.stdout + run.stderr).to.include('no-such-report.csv');
      });

      it('discrepancy 99999 (no such discrepancy): 1', async () => {
        const run = await cli('discrepancy', '99999');
        expect(run.code).to.equal(1);
        expect(run.stderr).to.include('no discrepancy 99999');
      });

      it('ack and resolve that change nothing: 1', async () => {
        const ack = await cli('ack', '99999', '--note', 'checked', '--by', 'ana');
        expect(ack.code, ack.stderr).to.equal(1);
        const resolve = await cli('resolve', '99999', '--note', 'refunded', '--by', 'ana');
        expect(resolve.code, resolve.stderr).to.equal(1);
      });

      it('dismiss of no such discrepancy, discrepancies to an unwritable file: 1', async () => {
        const dismiss = await cli('dismiss', '99999', '--note', 'noise', '--by', 'ana');
        expect(dismiss.code, dismiss.stderr).to.equal(1);
        const unwritable = join(embeddedDir, 'no-such-dir', 'out.csv');
        const list = await cli('discrepancies', '--format', 'csv', '--output', unwritable);
        expect(list.code, list.stderr).to.equal(1);
        expect(list.stderr).to.include('no-such-dir');
      });

      it('worker with a reconcilers directory that does not exist: 1, naming it', async () => {
        const run = await cli('worker', '--reconcilers', join(embeddedDir, 'no-reconcilers'));
        expect(run.code).to.equal(1);
        expect(run.stderr).to.include('no-reconcilers');
      });

      it('serve on a port already taken: 1, saying the port is in use', async () => {
        const run = await cli('serve', '--port', String(takenPort));
        expect(run.code).to.equal(1);
        expect(run.stderr).to.include(`port ${takenPort} on 127.0.0.1 is already in use`);
      });

      it('demo (npm start) on a port already taken: 1 before the day starts', async () => {
        const run = await cli('demo', '--port', String(takenPort), '--orders', '2');
        expect(run.code).to.equal(1);
        expect(run.stderr).to.include(`port ${takenPort} on 127.0.0.1 is already in use`);
        expect(run.stdout).not.to.include('a day of orders');
      });

      it('usage errors: 2 (a missing argument or option, an unknown option, an unknown command)', async () => {
        for (const args of [
          ['discrepancy'],
          ['discrepancies', '--colour'],
          ['purge'],
          ['no-such-command'],
          ['worker', '--max-concurrent-runs', '0'],
        ]) {
          const run = await cli(...args);
          expect(run.code, args.join(' ')).to.equal(2);
          expect(run.stderr, args.join(' ')).to.include('usage:');
        }
      });
    });
  }
});
