import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { getDiscrepancy } from '../../src/discrepancies/getDiscrepancy.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import {
  completedIntent,
  dbNow,
  discrepanciesOf,
  intentRow,
  minutes,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

/**
 * Row kinds: a report's refunds, chargebacks, fees, payouts and failed tries are what the partner says
 * happened besides executions. Before row kinds, each of them was read as an execution: a refund made a
 * `duplicate_execution` (with a negative "amount at risk" from its negative amount), a fee an
 * `orphan_partner_record`, and rows whose kind nobody could map ate the reject ratio.
 */
describe('reconcile: row kinds (execution, reversal, failed, ignored)', () => {
  const fx = useReconcileFixture('rec_kinds');
  let base: Date;
  const at = (m: number) => minutes(base, m).toISOString();

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  const TYPES = {
    Settled: 'execution',
    Refunded: 'reversal',
    Chargeback: 'reversal',
    Refused: 'failed',
    Fee: 'ignored',
    MerchantPayout: 'ignored',
  } as const;

  /** A CSV source with a `type` column mapped by the value table above. */
  function source(path: string, kind: CsvSourceConfig['kind'] = { column: 'type', values: TYPES }) {
    return {
      type: 'csv' as const,
      path,
      columns: {
        reference: 'reference',
        partnerReference: 'psp',
        amount: 'amount',
        currency: 'currency',
        executedAt: 'executed_at',
      },
      kind,
    };
  }

  function reconciler(
    partner: string,
    path: string,
    overrides: Partial<ReconcilerConfig> = {},
  ): ReconcilerConfig {
    return {
      partner,
      schedule: '*/15 * * * *',
      stuckAfter: '15m',
      settlementLag: '1h',
      deadline: '3d',
      coverage: { from: new Date(at(0)), to: new Date(at(480)) },
      source: source(path),
      ...overrides,
    };
  }

  /** type, reference, psp, amount, currency, executed_at */
  function writeReport(name: string, rows: readonly (readonly string[])[]): string {
    const path = join(fx.dir, name);
    const lines = ['type,reference,psp,amount,currency,executed_at', ...rows.map((row) => row.join(','))];
    writeFileSync(path, `${lines.join('\n')}\n`);
    return path;
  }

  async function run(config: ReconcilerConfig): Promise<ReconciliationResult> {
    const [report] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    return report;
  }

  async function stuck(partner: string, ref: string, m: number, overrides = {}): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, ref, overrides));
    await place(fx.sql, id, { startedAt: minutes(base, m) });
    return id;
  }

  it('a refund is no second execution, a fee and a payout no orphan; counted by kind; re-running changes nothing', async () => {
    const partner = partnerName('kinds');
    const refunded = await stuck(partner, 'order-1', 60);
    const twice = await stuck(partner, 'order-2', 70, { amount: '500', currency: 'JPY' });
    const path = writeReport(`${partner}.csv`, [
      ['Settled', 'order-1', 'PSP-1', '10.00', 'BRL', at(61)],
      ['Refunded', 'order-1', 'PSP-1', '-10.00', 'BRL', at(200)],
      ['Settled', 'order-2', 'PSP-2', '500', 'JPY', at(71)],
      ['Settled', 'order-2', 'PSP-2b', '500', 'JPY', at(72)],
      ['Chargeback', 'order-2', 'PSP-2b', '-500', 'JPY', at(300)],
      ['Fee', '', '', '-0.30', 'BRL', at(100)],
      ['MerchantPayout', '', 'PAYOUT-1', '-1000.00', 'BRL', at(400)],
    ]);
    const report = await run(reconciler(partner, path));

    expect(report.rowsRead).to.equal(7);
    expect(report.rowsRejected).to.equal(0);
    expect(report.rowsByKind).to.deep.equal({ execution: 3, reversal: 2, failed: 0, ignored: 2 });
    expect(report.resolved).to.deep.equal({ completed: 2, notExecuted: 0 });
    expect(report.warnings).to.deep.equal([]);
    expect(await intentRow(fx.sql, refunded)).to.deep.include({
      status: 'completed',
      partner_reference: 'PSP-1',
    });
    expect((await intentRow(fx.sql, twice)).status).to.equal('completed');

    // One duplicate, for the intent really executed twice: at risk one execution of its own amount, in
    // its own currency, never a sum over rows and never negative.
    const flagged = await discrepanciesOf(fx.sql, partner);
    expect(flagged.map((d) => [d.kind, d.intent_id])).to.deep.equal([['duplicate_execution', twice]]);
    expect(flagged[0]).to.deep.include({ amount_at_risk: '500', currency: 'JPY' });
    expect(flagged[0].details.executions).to.equal(2);

    // The chargeback is stored beside the execution it reverses, and shown on the discrepancy.
    const records = await fx.sql.query(
      `SELECT line, kind, intent_id, reverses, identity FROM partner_records WHERE partner = $1 ORDER BY line`,
      [partner],
    );
    const byLine = new Map(records.rows.map((r) => [r.line, r]));
    expect([...byLine.keys()]).to.deep.equal([2, 3, 4, 5, 6]);
    expect(byLine.get(3)).to.deep.include({
      kind: 'reversal',
      intent_id: refunded,
      identity: 'reversal:PSP-1|order-1#1',
    });
    expect(byLine.get(3).reverses).to.equal(
      (await fx.sql.query(`SELECT id FROM partner_records WHERE partner = $1 AND line = 2`, [partner]))
        .rows[0].id,
    );
    const chargedBack = (
      await fx.sql.query(`SELECT id FROM partner_records WHERE partner = $1 AND line = 5`, [partner])
    ).rows[0].id;
    expect(byLine.get(6)).to.deep.include({ kind: 'reversal', intent_id: twice, reverses: chargedBack });
    const detail = await getDiscrepancy(
      fx.sql,
      (await fx.sql.query(`SELECT id FROM discrepancies WHERE partner = $1`, [partner])).rows[0].id,
    );
    expect(detail?.partnerRecords.map((r) => r.line)).to.deep.equal([4, 5]);
    expect(detail?.reversals.map((r) => [r.line, r.amount, r.currency])).to.deep.equal([[6, '-500', 'JPY']]);

    const before = await snapshot(fx.sql);
    const again = await run(reconciler(partner, path));
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(Object.values(again.discrepancies).every((n) => n === 0)).to.equal(true);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    const stored = await fx.sql.query(`SELECT rows_by_kind FROM reconciliation_runs WHERE id = $1`, [
      again.runId,
    ]);
    expect(stored.rows[0].rows_by_kind).to.deep.equal({ execution: 3, reversal: 2, failed: 0, ignored: 2 });
  });

  it('a refund in a later report ties to the execution stored by an earlier run; one of nothing we know is a warning', async () => {
    const partner = partnerName('later-refund');
    const done = await completedIntent(fx.ledger, spec(partner, 'order-5'), 'PSP-5');
    await place(fx.sql, done, { startedAt: minutes(base, 30) });
    const first = writeReport(`${partner}-1.csv`, [['Settled', 'order-5', 'PSP-5', '10.00', 'BRL', at(31)]]);
    await run(reconciler(partner, first));
    const second = writeReport(`${partner}-2.csv`, [
      ['Refunded', 'order-5', 'PSP-5', '-10.00', 'BRL', at(100)],
      ['Refunded', 'order-unknown', 'PSP-404', '-3.00', 'BRL', at(101)],
    ]);
    const report = await run(reconciler(partner, second, { coverage: undefined }));
    expect(report.rowsByKind).to.deep.equal({ execution: 0, reversal: 2, failed: 0, ignored: 0 });
    expect(report.warnings).to.include(
      '1 reversal row reverse no execution of an intent on record (line 3): nothing was completed or flagged for it',
    );
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
    const reversals = await fx.sql.query(
      `SELECT r.line, r.intent_id, e.line AS reversed_line
         FROM partner_records r LEFT JOIN partner_records e ON e.id = r.reverses
        WHERE r.partner = $1 AND r.kind = 'reversal' ORDER BY r.line`,
      [partner],
    );
    expect(reversals.rows).to.deep.equal([
      { line: 2, intent_id: done, reversed_line: 2 },
      { line: 3, intent_id: null, reversed_line: null },
    ]);
  });

  it('a failed try completes nothing and proves nothing absent; an intent with no row at all is proven absent', async () => {
    const partner = partnerName('failed');
    const refused = await stuck(partner, 'order-7', 60);
    const absent = await stuck(partner, 'order-8', 65);
    const anchor = await stuck(partner, 'order-9', 66);
    const path = writeReport(`${partner}.csv`, [
      ['Refused', 'order-7', 'PSP-7', '10.00', 'BRL', at(61)],
      ['Settled', 'order-9', 'PSP-9', '10.00', 'BRL', at(67)],
    ]);
    const report = await run(reconciler(partner, path));
    expect(report.rowsByKind).to.deep.equal({ execution: 1, reversal: 0, failed: 1, ignored: 0 });
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
    expect((await intentRow(fx.sql, refused)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, anchor)).status).to.equal('completed');
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
    const failed = await fx.sql.query(
      `SELECT line, kind, intent_id FROM partner_records WHERE partner = $1 AND kind = 'failed'`,
      [partner],
    );
    expect(failed.rows).to.deep.equal([{ line: 2, kind: 'failed', intent_id: refused }]);
  });

  it('a refund whose sale is in another file keeps its intent from being proven absent (it was executed)', async () => {
    const partner = partnerName('refund-only');
    const refunded = await stuck(partner, 'order-20', 60);
    const absent = await stuck(partner, 'order-21', 65);
    const anchor = await stuck(partner, 'order-22', 66);
    const path = writeReport(`${partner}.csv`, [
      ['Refunded', 'order-20', 'PSP-20', '-10.00', 'BRL', at(120)],
      ['Settled', 'order-22', 'PSP-22', '10.00', 'BRL', at(67)],
    ]);
    const report = await run(reconciler(partner, path));
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
    expect((await intentRow(fx.sql, refunded)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, anchor)).status).to.equal('completed');
  });

  it('under amount matching a failed row could be anybody`s try: the run proves nothing absent', async () => {
    const partner = partnerName('failed-amount');
    const absent = await stuck(partner, 'order-10', 60, { amount: '42.00' });
    const anchor = await stuck(partner, 'order-11', 90, { amount: '7.00' });
    const path = writeReport(`${partner}.csv`, [
      ['Refused', '', 'PSP-10', '42.00', 'BRL', at(61)],
      ['Settled', '', 'PSP-11', '7.00', 'BRL', at(91)],
    ]);
    const report = await run(
      reconciler(partner, path, { match: { by: 'amount', amountTolerance: '0.01', timeWindow: '10m' } }),
    );
    expect(report.warnings).to.include(
      '1 failed rows could be the try of any intent matched by amount: this run proves no intent absent',
    );
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    expect((await intentRow(fx.sql, absent)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, anchor)).status).to.equal('completed');
  });

  it('a value the table does not know is a rejected row naming the column and value, and shields its intent', async () => {
    const partner = partnerName('unknown-kind');
    const named = await stuck(partner, 'order-12', 60);
    const anchor = await stuck(partner, 'order-13', 61);
    const path = writeReport(`${partner}.csv`, [
      ['SecondChargeback', 'order-12', 'PSP-12', '-10.00', 'BRL', at(61)],
      ['Settled', 'order-13', 'PSP-13', '10.00', 'BRL', at(62)],
    ]);
    const report = await run(reconciler(partner, path, { maxRejectedRatio: 0.5 }));
    expect(report.rejected).to.deep.equal([
      {
        line: 2,
        field: 'type',
        reason:
          '"SecondChargeback" is not a known type (known: Settled, Refunded, Chargeback, Refused, Fee, MerchantPayout); the row\'s kind is not guessed',
      },
    ]);
    expect(report.rowsByKind).to.deep.equal({ execution: 1, reversal: 0, failed: 0, ignored: 0 });
    expect((await intentRow(fx.sql, named)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, anchor)).status).to.equal('completed');

    const strict = await reconcile({ pool: fx.sql, reconciler: reconciler(partner, path) });
    expect(strict[0].status).to.equal('failed');
  });

  it('a function over two columns classifies codes; what it does not know is rejected, never guessed', async () => {
    const partner = partnerName('classify');
    const sent = await stuck(partner, 'order-14', 60);
    const path = join(fx.dir, `${partner}.csv`);
    writeFileSync(
      path,
      [
        'type,reference,psp,amount,currency,executed_at,direction',
        `Settled,order-14,PSP-14,10.00,BRL,${at(61)},outbound`,
        `Settled,order-15,PSP-15,10.00,BRL,${at(62)},inbound`,
        `Settled,order-16,PSP-16,10.00,BRL,${at(63)},sideways`,
        '',
      ].join('\n'),
    );
    const classify = ({ type, direction }: Readonly<Record<string, string>>) => {
      if (direction === 'inbound') return 'ignored' as const;
      if (direction === 'outbound' && type === 'Settled') return 'execution' as const;
      return undefined;
    };
    const report = await run(
      reconciler(partner, path, {
        maxRejectedRatio: 0.5,
        source: source(path, { columns: ['type', 'direction'], classify }),
      }),
    );
    expect(report.rowsByKind).to.deep.equal({ execution: 1, reversal: 0, failed: 0, ignored: 1 });
    expect(report.rejected).to.deep.equal([
      {
        line: 4,
        field: 'type',
        reason:
          'type "Settled", direction "sideways" is not a known kind of row; the row\'s kind is not guessed',
      },
    ]);
    expect((await intentRow(fx.sql, sent)).status).to.equal('completed');
    expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.kind)).to.deep.equal([]);
  });

  it('a kind column missing from the header fails the run naming it; a rule mapping to no kind fails at load', async () => {
    const partner = partnerName('no-kind-column');
    const path = join(fx.dir, `${partner}.csv`);
    writeFileSync(path, `reference,psp,amount,currency,executed_at\norder-1,P,1.00,BRL,${at(1)}\n`);
    const [report] = await reconcile({ pool: fx.sql, reconciler: reconciler(partner, path) });
    expect(report.status).to.equal('failed');
    expect(report.error).to.contain('"type" (kind)');

    const [misconfigured] = await reconcile({
      pool: fx.sql,
      reconciler: reconciler(partner, path, {
        source: source(path, { column: 'type', values: { Settled: 'executed' as never } }),
      }),
    });
    expect(misconfigured.status).to.equal('failed');
    expect(misconfigured.error).to.contain(
      'kind.values["Settled"] must be one of execution, reversal, failed, ignored, got "executed"',
    );
  });

  it('an API listing: kinds read from dot paths; an unknown status is a rejected item, an inbound one ignored', async () => {
    const partner = partnerName('api-kinds');
    const sent = await stuck(partner, '+5511900000001', 60);
    const undelivered = await stuck(partner, '+5511900000002', 61);
    const items = [
      {
        sid: 'SM1',
        to: '+5511900000001',
        price: '-0.05',
        unit: 'USD',
        at: at(61),
        s: { status: 'delivered' },
        direction: 'outbound-api',
      },
      {
        sid: 'SM2',
        to: '+5511900000002',
        price: null,
        unit: 'USD',
        at: at(62),
        s: { status: 'undelivered' },
        direction: 'outbound-api',
      },
      {
        sid: 'SM3',
        to: '+15550000000',
        price: null,
        unit: 'USD',
        at: at(63),
        s: { status: 'received' },
        direction: 'inbound',
      },
      {
        sid: 'SM4',
        to: '+5511900000009',
        price: '-0.05',
        unit: 'USD',
        at: at(64),
        s: { status: 'teleported' },
        direction: 'outbound-api',
      },
    ];
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ data: items }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const [report] = await reconcile({
        pool: fx.sql,
        reconciler: {
          partner,
          schedule: '*/15 * * * *',
          stuckAfter: '15m',
          settlementLag: '1h',
          deadline: '3d',
          maxRejectedRatio: 0.5,
          source: {
            type: 'api',
            baseUrl: `http://127.0.0.1:${port}`,
            path: '/messages',
            fields: { reference: 'to', partnerReference: 'sid', executedAt: 'at' },
            kind: {
              columns: ['s.status', 'direction'],
              classify: (v) => {
                if (v.direction === 'inbound') return 'ignored';
                if (v['s.status'] === 'delivered') return 'execution';
                if (v['s.status'] === 'undelivered') return 'failed';
                return undefined;
              },
            },
            retries: 0,
          },
        },
      });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect(report.rowsByKind).to.deep.equal({ execution: 1, reversal: 0, failed: 1, ignored: 1 });
      expect(report.rejected).to.deep.equal([
        {
          line: 4,
          field: 's.status',
          reason:
            's.status "teleported", direction "outbound-api" is not a known kind of row; the row\'s kind is not guessed',
        },
      ]);
      expect((await intentRow(fx.sql, sent)).status).to.equal('completed');
      expect((await intentRow(fx.sql, undelivered)).status).to.equal('unknown');
      expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
