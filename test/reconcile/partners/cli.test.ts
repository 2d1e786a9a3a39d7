import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { runCli } from '../../support/cliProcess.js';
import { discrepanciesOf, useReconcileFixture } from '../support.js';

const ROOT = resolve(__dirname, '../../../..');
const FIXTURES = join(ROOT, 'test/fixtures/partners');

/**
 * The shipped file reconcilers run as a deployment runs them: `intent-ledger reconcile <partner> --file F
 * --json --reconcilers reconcilers/`, the reconcilers loaded from source (every file of reconcilers/, the
 * Twilio one without its environment, which it only needs when it runs).
 */
describe('shipped partners through the CLI (--file)', () => {
  const fx = useReconcileFixture('rec_partners_cli');

  const cases = [
    {
      partner: 'adyen',
      file: join(FIXTURES, 'adyen/settlement_detail_report_batch_4.csv'),
      rowsByKind: { execution: 7, reversal: 2, failed: 0, ignored: 2 },
      orphans: 7,
    },
    {
      partner: 'cielo',
      file: join(FIXTURES, 'cielo/CIELO03_1234567890_20261201_0000001.txt'),
      rowsByKind: { execution: 5, reversal: 3, failed: 1, ignored: 5 },
      orphans: 5,
    },
    {
      partner: 'stripe',
      file: join(FIXTURES, 'stripe/itemized_payout_reconciliation_po_1QxPayout0000000000001.csv'),
      rowsByKind: { execution: 5, reversal: 2, failed: 0, ignored: 1 },
      orphans: 5,
    },
    {
      partner: 'paypal',
      file: join(FIXTURES, 'paypal/STL-20261130.01.009.CSV'),
      rowsByKind: { execution: 5, reversal: 3, failed: 0, ignored: 2 },
      orphans: 5,
    },
  ];
  for (const entry of cases) {
    it(`${entry.partner}: reads its fixture, counts rows by kind, and (no intents here) flags only executions as orphans`, async () => {
      const run = await runCli(
        [
          'reconcile',
          entry.partner,
          '--json',
          '--file',
          entry.file,
          '--reconcilers',
          join(ROOT, 'reconcilers'),
        ],
        { DATABASE_URL: fx.db.url, LOG_LEVEL: 'warn' },
      );
      expect(run.code, run.stderr).to.equal(0);
      const result = JSON.parse(run.stdout);
      expect(result).to.deep.include({ partner: entry.partner, status: 'succeeded', rowsRejected: 0 });
      expect(result.rowsByKind).to.deep.equal(entry.rowsByKind);
      // One orphan per execution row (no intent here to match or group them); none for refunds, disputes, fees.
      expect(result.discrepancies.orphan_partner_record).to.equal(entry.orphans);
      expect(result.discrepancies.duplicate_execution).to.equal(0);
      const kinds = (await discrepanciesOf(fx.sql, entry.partner)).map((d) => d.kind);
      expect(kinds).to.deep.equal(Array(entry.orphans).fill('orphan_partner_record'));
      // Why the run proved nothing absent (these reconcilers declare no coverage, or have no account set) is in
      // the JSON, as in the run's row, and printed by the plain output too.
      const stored = await fx.sql.query<{ warnings: string[] }>(
        'SELECT warnings FROM reconciliation_runs WHERE id = $1',
        [result.runId],
      );
      expect(result.warnings).to.deep.equal(stored.rows[0].warnings);
      // Every field README "reconcile --json" lists, and no other.
      expect(Object.keys(result)).to.have.members([
        'runId',
        'partner',
        'source',
        'noReport',
        'status',
        'rowsRead',
        'rowsRejected',
        'rejected',
        'rowsByKind',
        'matched',
        'ambiguous',
        'resolved',
        'corrected',
        'discrepancies',
        'coverage',
        'warnings',
        'error',
      ]);
      expect(result.warnings).to.have.length.greaterThan(0);
      expect(result.noReport, 'a --file run read a report').to.equal(false);
      const plain = await runCli(
        [
          'reconcile',
          entry.partner,
          '--dry-run',
          '--file',
          entry.file,
          '--reconcilers',
          join(ROOT, 'reconcilers'),
        ],
        { DATABASE_URL: fx.db.url, LOG_LEVEL: 'warn' },
      );
      expect(plain.code, plain.stderr).to.equal(0);
      for (const warning of result.warnings) expect(plain.stdout).to.contain(`  warning: ${warning}`);
    });
  }
});
