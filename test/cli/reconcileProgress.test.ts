import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { createReconcileProgress } from '../../src/cli/reconcileProgress.js';
import { type RunProgress, reconcile } from '../../src/reconcile/reconcile.js';
import {
  type CsvRow,
  csvReconciler,
  partnerName,
  useReconcileFixture,
  writeCsv,
} from '../reconcile/support.js';
import { hasScript, runCli, runCliOnTerminal } from '../support/cliProcess.js';

/** A `\r` that is not the end of a line: a progress bar redrawing in place. */
const REDRAW = /\r(?!\n)/;
/** More rows than one staged batch (5,000), so reading reports progress before it ends. */
const ROWS = 12_001;

function rows(count: number, prefix: string): CsvRow[] {
  return Array.from({ length: count }, (_, i) => ({
    reference: `${prefix}-${i}`,
    nsu: `N${i}`,
    amount: '10.00',
    executedAt: '2026-11-28T10:00:00Z',
  }));
}

function fakeTerminal() {
  const writes: string[] = [];
  return {
    writes,
    text: () => writes.join(''),
    stream: { columns: 80, write: (t: string) => writes.push(t) },
  };
}

describe('reconcile progress: onProgress, the CLI display, quiet off a terminal', function () {
  this.timeout(120_000);
  const fx = useReconcileFixture('reconcile_progress');
  let partner: string;
  let file: string;

  before(() => {
    partner = partnerName('progress');
    file = writeCsv(fx.dir, 'report.csv', rows(ROWS, partner));
  });

  describe('reconcile({ onProgress })', () => {
    it('reports reading with increasing rows, then deciding, then done at the report rowsRead', async () => {
      const seen: RunProgress[] = [];
      const [report] = await reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file),
        dryRun: true,
        onProgress: (progress) => seen.push(progress),
      });
      expect(report.status).to.equal('dry_run');
      expect(report.rowsRead).to.equal(ROWS);
      expect(seen.map((p) => p.runId).every((id) => id === report.runId)).to.equal(true);
      expect(seen.map((p) => p.source).every((source) => source === file)).to.equal(true);

      const phases = seen.map((p) => p.phase);
      const reading = seen.filter((p) => p.phase === 'reading').map((p) => p.rowsRead);
      expect(phases).to.deep.equal([...reading.map(() => 'reading'), 'deciding', 'done']);
      expect(reading[0]).to.equal(0);
      // Progress while reading, not only at its end.
      expect(reading.some((n) => n > 0 && n < ROWS)).to.equal(true);
      const counts = seen.map((p) => p.rowsRead);
      for (let i = 1; i < counts.length; i++) expect(counts[i]).to.be.at.least(counts[i - 1]);
      expect(seen.at(-2)).to.deep.include({ phase: 'deciding', rowsRead: ROWS });
      expect(seen.at(-1)).to.deep.equal({
        phase: 'done',
        runId: report.runId,
        source: file,
        rowsRead: report.rowsRead,
        status: 'dry_run',
      });
    });

    it('a run that fails while reading goes from reading straight to done, failed', async () => {
      const missing = join(fx.dir, 'missing.csv');
      const seen: RunProgress[] = [];
      const [report] = await reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file),
        file: missing,
        onProgress: (progress) => seen.push(progress),
      });
      expect(report.status).to.equal('failed');
      expect(seen.map((p) => p.phase)).to.deep.equal(['reading', 'done']);
      expect(seen[1]).to.deep.include({ status: 'failed', rowsRead: 0 });
    });

    it('a listener that throws never breaks the run', async () => {
      let calls = 0;
      const [report] = await reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file),
        dryRun: true,
        onProgress: () => {
          calls++;
          throw new Error('the terminal went away');
        },
      });
      expect(report.status).to.equal('dry_run');
      expect(report.rowsRead).to.equal(ROWS);
      expect(report.error).to.equal(null);
      expect(calls).to.be.at.least(4);
    });
  });

  describe('the reconcile command display (injected stream)', () => {
    const at = (source: string, rowsRead: number) =>
      ({ phase: 'reading', runId: '7', source, rowsRead }) as const;

    it('draws rows read in place, then one deciding line completed with its time and status', () => {
      const terminal = fakeTerminal();
      let now = 0;
      const display = createReconcileProgress({ enabled: true, stream: terminal.stream, now: () => now });
      display.onProgress(at('/reports/acme-pay/2026-11-28.csv', 0));
      now = 200;
      display.onProgress(at('/reports/acme-pay/2026-11-28.csv', 5_000));
      now = 400;
      display.onProgress({ phase: 'deciding', runId: '7', source: 'x', rowsRead: 12_001 });
      now = 12_700;
      display.onProgress({ phase: 'done', runId: '7', source: 'x', rowsRead: 12_001, status: 'succeeded' });
      display.finish();

      expect(terminal.writes[0]).to.match(/^\rreading 2026-11-28\.csv 0 /);
      expect(terminal.writes[1]).to.match(/^\rreading 2026-11-28\.csv 5000 /);
      expect(terminal.text()).to.match(
        /\rreading 2026-11-28\.csv 12001 [^\n]*\ndeciding on 12001 rows\.\.\. 12\.3 s, succeeded\n$/,
      );
      expect(terminal.text().split('\n')).to.have.length(3);
    });

    it('ends the line of a run that failed while reading, and starts a new one for the next run', () => {
      const terminal = fakeTerminal();
      const display = createReconcileProgress({ enabled: true, stream: terminal.stream, now: () => 0 });
      display.onProgress(at('a.csv', 0));
      display.onProgress({ phase: 'done', runId: '7', source: 'a.csv', rowsRead: 3, status: 'failed' });
      display.onProgress({ phase: 'reading', runId: '8', source: 'b.csv', rowsRead: 0 });
      display.finish();
      display.finish();
      expect(terminal.text()).to.match(
        /^\rreading a\.csv 0 [^\n]*\rreading a\.csv 3 [^\n]*\n\rreading b\.csv 0 [^\n]*\n$/,
      );
    });

    it('draws nothing when disabled', () => {
      const terminal = fakeTerminal();
      const display = createReconcileProgress({ enabled: false, stream: terminal.stream });
      display.onProgress(at('a.csv', 10));
      display.onProgress({ phase: 'deciding', runId: '7', source: 'a.csv', rowsRead: 10 });
      display.onProgress({ phase: 'done', runId: '7', source: 'a.csv', rowsRead: 10, status: 'succeeded' });
      display.finish();
      expect(terminal.writes).to.deep.equal([]);
    });
  });

  describe('intent-ledger reconcile', () => {
    let reconcilers: string;
    const env = () => ({ DATABASE_URL: fx.db.url, LOG_LEVEL: 'silent' });

    before(() => {
      reconcilers = join(fx.dir, 'reconcilers');
      mkdirSync(reconcilers);
      writeFileSync(
        join(reconcilers, 'progress.js'),
        `module.exports = ${JSON.stringify(csvReconciler(partner, file))};\n`,
      );
    });

    it('draws no progress when stderr is not a terminal, with or without --json', async () => {
      for (const json of [[], ['--json']]) {
        const run = await runCli(
          ['reconcile', partner, '--dry-run', '--reconcilers', reconcilers, ...json],
          env(),
        );
        expect(run.code, run.stderr).to.equal(0);
        expect(run.stderr).to.equal('');
        expect(run.stdout).not.to.match(REDRAW);
      }
    });

    it('on a terminal draws rows read and the deciding line; with --json it stays quiet', async function () {
      if (!hasScript) this.skip();
      const run = await runCliOnTerminal(
        ['reconcile', partner, '--dry-run', '--reconcilers', reconcilers],
        env(),
      );
      expect(run.code, run.stdout).to.equal(0);
      expect(run.stdout).to.match(/\rreading report\.csv 0 /);
      expect(run.stdout).to.match(/\rreading report\.csv 12001 /);
      expect(run.stdout).to.match(/\r\ndeciding on 12001 rows\.\.\. \d+\.\d s, dry_run\r\n/);
      // The bar is finished before the summary goes to stdout.
      expect(run.stdout).to.match(/dry_run\r\nrun \d+ progress-\d+ dry_run: /);

      const json = await runCliOnTerminal(
        ['reconcile', partner, '--dry-run', '--json', '--reconcilers', reconcilers],
        env(),
      );
      expect(json.code, json.stdout).to.equal(0);
      expect(json.stdout).not.to.match(REDRAW);
      expect(JSON.parse(json.stdout)).to.include({ status: 'dry_run', rowsRead: ROWS });
    });
  });
});
