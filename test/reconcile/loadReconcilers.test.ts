import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ReconcilerConfigError } from '../../src/reconcile/errors/ReconcilerConfigError.js';
import { loadReconciler, loadReconcilers } from '../../src/reconcile/loadReconcilers.js';
import { runCli } from '../support/cliProcess.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

const SOURCE = `{ type: 'csv', path: 'reports/*.csv', columns: { reference: 'REF', amount: 'AMOUNT' } }`;

/** A reconciler file in each way users write one, each importing the package by name. */
const FILES: Record<string, string> = {
  'esm.mjs': `import { defineReconciler } from 'intent-ledger';
export default defineReconciler({ partner: 'from-mjs', schedule: '0 * * * *', source: ${SOURCE} });`,
  'commonjs.cjs': `const { defineReconciler } = require('intent-ledger');
module.exports = defineReconciler({ partner: 'from-cjs', schedule: '0 * * * *', source: ${SOURCE} });`,
  'typed.mts': `import { defineReconciler, type ReconcilerConfig } from 'intent-ledger';
const config: ReconcilerConfig = { partner: 'from-mts', schedule: '0 * * * *', source: ${SOURCE} };
export default defineReconciler(config);`,
  'typed.ts': `import { defineReconciler } from 'intent-ledger';
export default defineReconciler({ partner: 'from-ts', schedule: '0 * * * *', source: ${SOURCE} });`,
  'typed-commonjs.cts': `import { defineReconciler } from 'intent-ledger';
export default defineReconciler({ partner: 'from-cts', schedule: '0 * * * *', source: ${SOURCE} });`,
  'plain.js': `const { defineReconciler } = require('intent-ledger');
module.exports = defineReconciler({ partner: 'from-js', schedule: '0 * * * *', source: ${SOURCE} });`,
  // Declarations beside compiled files hold no reconciler.
  'typed.d.ts': 'export {};',
  'notes.txt': 'not a reconciler',
};

describe('reconcilers load as users write them, from a directory outside the repository', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('load_reconcilers');
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'intent-ledger-reconcilers-'));
    for (const [name, text] of Object.entries(FILES)) writeFileSync(join(dir, name), text);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(".mjs, .cjs, .mts (and .ts, .cts, .js) importing 'intent-ledger' all load, validated with defaults", async () => {
    const loaded = await loadReconcilers(dir);
    expect(
      loaded.map((reconciler) => [reconciler.file.slice(dir.length + 1), reconciler.config.partner]),
    ).to.deep.equal([
      ['commonjs.cjs', 'from-cjs'],
      ['esm.mjs', 'from-mjs'],
      ['plain.js', 'from-js'],
      ['typed-commonjs.cts', 'from-cts'],
      ['typed.mts', 'from-mts'],
      ['typed.ts', 'from-ts'],
    ]);
    for (const { config } of loaded)
      expect(config).to.include({ timezone: 'UTC', stuckAfter: '15m', deadline: '3d' });
  });

  it("the CLI reconciles with one of them: 'intent-ledger' resolves in the running command too", async () => {
    const report = join(dir, 'report.csv');
    writeFileSync(report, 'REF,AMOUNT\norder-1,10.00\n');
    const run = await runCli(
      ['reconcile', 'from-mjs', '--reconcilers', dir, '--file', report, '--dry-run', '--json'],
      {
        DATABASE_URL: db.url,
        LOG_LEVEL: 'silent',
      },
    );
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout)).to.satisfy((out: unknown) =>
      JSON.stringify(out).includes('"partner":"from-mjs"'),
    );
  });

  describe('the whole file is validated at load, every problem at once', () => {
    let bad: string;
    before(() => {
      bad = mkdtempSync(join(tmpdir(), 'intent-ledger-bad-reconciler-'));
      // The report path does not exist: the problems must be found without reading it.
      writeFileSync(
        join(bad, 'acme.mjs'),
        `export default {
  partner: 'acme-pay',
  schedule: 'every 15 minutes',
  stuckAftr: '15m',
  source: {
    type: 'csv',
    path: '/no/such/dir/*.csv',
    delimiter: ';',
    decimalSeparator: ';',
    colums: { reference: 'PEDIDO' },
  },
};`,
      );
    });
    after(() => rmSync(bad, { recursive: true, force: true }));

    it('names unknown keys with the closest known one, a decimalSeparator equal to the delimiter, and the rest', async () => {
      const error = await loadReconciler(bad, 'acme-pay').catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(ReconcilerConfigError);
      const { problems, message, file } = error as ReconcilerConfigError;
      expect(file).to.equal(join(bad, 'acme.mjs'));
      expect(message).to.include(join(bad, 'acme.mjs')).and.include('problems:');
      expect(problems.join('\n')).not.to.include('ENOENT');
      expect(problems.some((p) => p.startsWith('schedule must be a node-cron expression'))).to.equal(
        true,
        message,
      );
      expect(
        problems.some((p) => p.startsWith('stuckAftr is not a known setting (did you mean stuckAfter?)')),
      ).to.equal(true, message);
      expect(
        problems.some((p) =>
          p.startsWith('source.colums is not a known setting (did you mean source.columns?)'),
        ),
      ).to.equal(true, message);
      expect(problems).to.include('source.columns must map report headers, such as { reference: "ORDER" }');
      expect(problems).to.include('source.decimalSeparator and delimiter are both ";"');
      expect(problems).to.have.length(5);
    });

    it('a decimalSeparator equal to the delimiter is refused on its own too', async () => {
      writeFileSync(
        join(bad, 'acme.mjs'),
        `export default { partner: 'acme-pay', schedule: '0 * * * *',
  source: { type: 'csv', path: 'x.csv', delimiter: ';', decimalSeparator: ';', columns: { reference: 'PEDIDO' } } };`,
      );
      const error = (await loadReconcilers(bad).catch((caught: unknown) => caught)) as ReconcilerConfigError;
      expect(error).to.be.instanceOf(ReconcilerConfigError);
      expect(error.problems).to.deep.equal(['source.decimalSeparator and delimiter are both ";"']);
    });
  });
});
