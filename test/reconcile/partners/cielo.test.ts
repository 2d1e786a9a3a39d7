import { join } from 'node:path';
import { expect } from 'chai';
import cielo from '../../../reconcilers/cielo.js';
import { getDiscrepancy } from '../../../src/discrepancies/getDiscrepancy.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import type { FixedWidthSourceConfig } from '../../../src/reports/fixedWidthSourceConfig.js';
import {
  discrepanciesOf,
  intentRow,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from '../support.js';

const FIXTURE = join(
  __dirname,
  '../../../../test/fixtures/partners/cielo/CIELO03_1234567890_20261201_0000001.txt',
);

/**
 * reconcilers/cielo.ts on an Extrato Eletrônico sales file written from Cielo's published 250-position layout
 * (test/fixtures/partners/cielo/): a header whose capture period is 30 November, a sales RO with a sale, a sale captured
 * twice, a wrong amount, a sale nobody asked for and a rejected sale; a cancellations RO with the cancellation
 * of the first sale and of a sale we only know from it; a chargeback RO with the chargeback of the second
 * capture; a fee RO with its fee; the trailer counting the 14 records between.
 */
describe('shipped partner: cielo (Extrato Eletrônico, sales file)', () => {
  const fx = useReconcileFixture('rec_cielo');

  function config(partner: string): ReconcilerConfig {
    return {
      ...cielo,
      partner,
      deadline: '30d',
      source: { ...(cielo.source as FixedWidthSourceConfig), path: FIXTURE },
    };
  }

  async function stuck(partner: string, ref: string, amount: string, at: string): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, ref, { amount, currency: 'BRL' }));
    await place(fx.sql, id, { startedAt: new Date(at) });
    return id;
  }

  it('settles every intent the file shows, and proves none absent: its header period is read off its own rows', async () => {
    const partner = partnerName('cielo');
    // Times in the file are São Paulo time (UTC-3): the first sale, 10:00:12, is 13:00:12 UTC.
    const ids = {
      sold: await stuck(partner, 'order-3001', '25.00', '2026-11-30T13:00:00Z'),
      twice: await stuck(partner, 'order-3002', '40.00', '2026-11-30T13:04:50Z'),
      wrongAmount: await stuck(partner, 'order-3003', '15.00', '2026-11-30T13:10:00Z'),
      notInFile: await stuck(partner, 'order-3004', '10.00', '2026-11-30T13:20:00Z'),
      onlyCancelled: await stuck(partner, 'order-3005', '30.00', '2026-11-30T13:25:00Z'),
      declined: await stuck(partner, 'order-3006', '35.00', '2026-11-30T13:40:00Z'),
    };
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.coverage).to.equal(null);
    expect(report.rowsRead).to.equal(14);
    expect(report.rowsRejected).to.equal(0);
    expect(report.rejected).to.deep.equal([]);
    // 4 ROs and the fee are ignored; the rejected sale is a failed try; two cancellations and a chargeback.
    expect(report.rowsByKind).to.deep.equal({ execution: 5, reversal: 3, failed: 1, ignored: 5 });
    expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });

    expect(await intentRow(fx.sql, ids.sold)).to.deep.include({
      status: 'completed',
      partner_reference: '000101',
    });
    expect(await intentRow(fx.sql, ids.twice)).to.deep.include({
      status: 'completed',
      partner_reference: '000102',
    });
    expect((await intentRow(fx.sql, ids.wrongAmount)).status).to.equal('completed');
    // Not in the file, but nothing proves the file whole for 30 November: stuck until a person or the
    // deadline decides, never charged again on the file's silence.
    expect((await intentRow(fx.sql, ids.notInFile)).status).to.equal('unknown');
    // A cancellation says the sale happened (in an earlier file): never proven absent, never charged again.
    expect((await intentRow(fx.sql, ids.onlyCancelled)).status).to.equal('unknown');
    // A declined sale completes nothing, and the retry may be in another file: not proven absent either.
    expect((await intentRow(fx.sql, ids.declined)).status).to.equal('unknown');
    expect(report.warnings).to.deep.equal([
      'the reconciler declares no coverage for its reports (coverage: { fromFileName } or { from, to }): intents found in the report are completed, but none is proven absent',
      '1 reversal row reverse no execution of an intent on record (line 11): nothing was completed or flagged for it',
    ]);

    const flagged = await discrepanciesOf(fx.sql, partner);
    expect(flagged.map((d) => [d.kind, d.intent_id, d.amount_at_risk, d.currency])).to.deep.equal([
      ['amount_mismatch', ids.wrongAmount, '4.99', 'BRL'],
      ['duplicate_execution', ids.twice, '40.00', 'BRL'],
      ['orphan_partner_record', null, '12.00', 'BRL'],
    ]);
    expect(flagged[2].reference).to.equal('order-3999');
    expect(flagged[2].partner_reference).to.equal('000199');

    // The chargeback of the second capture is shown beside it on the duplicate.
    const duplicateId = (
      await fx.sql.query(`SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'duplicate_execution'`, [
        partner,
      ])
    ).rows[0].id;
    const duplicate = await getDiscrepancy(fx.sql, String(duplicateId));
    expect(duplicate?.reversals.map((r) => [r.partnerReference, r.amount, r.currency])).to.deep.equal([
      ['000103', '-40.00', 'BRL'],
    ]);
    const others = await fx.sql.query(
      `SELECT r.kind, r.line, r.reference, r.intent_id, e.partner_reference AS reverses
         FROM partner_records r LEFT JOIN partner_records e ON e.id = r.reverses
        WHERE r.partner = $1 AND r.kind <> 'execution' ORDER BY r.line`,
      [partner],
    );
    expect(others.rows).to.deep.equal([
      { kind: 'failed', line: 8, reference: 'order-3006', intent_id: ids.declined, reverses: null },
      { kind: 'reversal', line: 10, reference: 'order-3001', intent_id: ids.sold, reverses: '000101' },
      // Cancels a sale no execution on record shows: stored with neither, and said in a warning.
      { kind: 'reversal', line: 11, reference: 'order-3005', intent_id: null, reverses: null },
      { kind: 'reversal', line: 13, reference: 'order-3002', intent_id: ids.twice, reverses: '000103' },
    ]);

    // The same file again resolves nothing and raises nothing (invariant 7).
    const [again] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(again.status).to.equal('succeeded');
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(Object.values(again.discrepancies).every((n) => n === 0)).to.equal(true);
    expect(await discrepanciesOf(fx.sql, partner)).to.have.length(3);
  });

  it('under a header that does declare a period, a sale dated outside it is rejected naming the date and time fields, and proves nothing about its intent', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const partner = partnerName('cielo');
    const early = await stuck(partner, 'order-3001', '25.00', '2026-11-30T13:00:00Z');
    const absent = await stuck(partner, 'order-3004', '10.00', '2026-11-30T13:20:00Z');
    // A row of the file matches an intent: the file plausibly is this partner's (judgePlausibility.ts).
    await stuck(partner, 'order-3002', '40.00', '2026-11-30T13:04:50Z');
    const records = readFileSync(FIXTURE, 'latin1').split('\r\n');
    // The first sale (line 3) dated 29 November, the day before the period the header declares.
    records[2] = `${records[2]!.slice(0, 37)}20261129${records[2]!.slice(45)}`;
    // Without its cancellation (line 10), so that only the rejected row speaks for order-3001.
    records.splice(9, 1);
    records[records.length - 2] = `9${'13'.padStart(11, '0')}${records[records.length - 2]!.slice(12)}`;
    const file = join(fx.dir, 'CIELO03_early_sale.txt');
    writeFileSync(file, records.join('\r\n'), 'latin1');
    // The same layout for a partner whose header is a promise that the file is complete for its period
    // (Cielo's is not, see reconcilers/cielo.ts): the trailer's count proves the file whole.
    const source = cielo.source as FixedWidthSourceConfig;
    const reconciler: ReconcilerConfig = {
      ...config(partner),
      maxRejectedRatio: 0.1,
      coverage: { fromReport: true },
      source: {
        ...source,
        path: file,
        header: {
          ...source.header!,
          period: { from: 'Período inicial', to: 'Período final', dateFormat: 'yyyyMMdd' },
        },
      },
    };
    const [report] = await reconcile({ pool: fx.sql, reconciler, file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rejected.map((r) => [r.line, r.field])).to.deep.equal([
      [3, 'Data da venda/ajuste + Hora da transação'],
    ]);
    expect(report.rejected[0]!.reason).to.match(/outside the period the report declares/);
    // The partner still says it sold order-3001: not proven absent. order-3004 is, as before.
    expect((await intentRow(fx.sql, early)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
  });

  it('a file cut before its trailer fails and applies nothing: no intent is proven absent', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const partner = partnerName('cielo');
    const absent = await stuck(partner, 'order-3004', '10.00', '2026-11-30T13:20:00Z');
    const sold = await stuck(partner, 'order-3001', '25.00', '2026-11-30T13:00:00Z');
    const cut = join(fx.dir, 'CIELO03_cut.txt');
    const records = readFileSync(FIXTURE, 'latin1').split('\r\n');
    writeFileSync(cut, `${records.slice(0, 8).join('\r\n')}\r\n`, 'latin1');
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: { ...config(partner), source: { ...(cielo.source as FixedWidthSourceConfig), path: cut } },
      file: cut,
    });
    expect(report.status).to.equal('failed');
    expect(report.error).to.include('without its trailer record (type 9)');
    expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect((await intentRow(fx.sql, absent)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, sold)).status).to.equal('unknown');
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
    const stored = await fx.sql.query('SELECT count(*)::int AS n FROM partner_records WHERE partner = $1', [
      partner,
    ]);
    expect(stored.rows[0].n).to.equal(0);
  });
});
