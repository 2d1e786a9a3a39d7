import { expect } from 'chai';
import cielo from '../../../reconcilers/cielo.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { discrepanciesOf, intentRow, partnerName } from '../support.js';
import { cieloFile, cv, CIELO_FIXTURE as FIXTURE, ro } from './cieloRecords.js';
import { useShippedPartner } from './shippedPartner.js';

/**
 * Adversarial review of reconcilers/cielo.ts: inputs that read one kind of CV as another. Each test fails on
 * the code it was written against and says what it should do instead.
 */
describe('review: cielo CVs read as the wrong kind', () => {
  const {
    fx,
    config: shipped,
    stuck,
  } = useShippedPartner({
    name: 'cielo_review',
    reconciler: cielo,
    fixture: FIXTURE,
    currency: 'BRL',
  });
  // These files hold two or three records, so one rejected row is far above the shipped maxRejectedRatio
  // (0.01), which would fail the run as a whole (applying nothing) before which row was rejected and why
  // could be seen: the run is let through with its rejections, as a file of a day's sales would be.
  const config = (partner: string, file: string) => ({ ...shipped(partner, file), maxRejectedRatio: 1 });

  it('a cancellation CV naming its cancellation RO, but placed after a sales RO, is not read as a sale', async () => {
    const partner = partnerName('cielo');
    const sold = await stuck(partner, 'order-3001', '25.00', '2026-11-30T13:00:00Z');
    // The cancellation of order-3001 names RO 0000002 (Tipo 03, origem 17) in its Número do RO, but the
    // latest RO before it is 0000003, a sales RO: the CV takes Tipo 01 from it.
    const file = cieloFile(fx.dir, 'CIELO03_misplaced_cancellation.txt', [
      ro('0000002', '03', '17'),
      ro('0000003', '01'),
      cv({
        roNumber: '0000002',
        sign: '-',
        cents: 2500,
        nsu: '000101',
        reference: 'order-3001',
        time: '000000',
      }),
    ]);
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    // Read as an execution of -25.00 it completes the intent off a refund and stores the refund as a sale.
    expect(report.rowsByKind.execution, 'a cancellation counted as a sale').to.equal(0);
    expect((await intentRow(fx.sql, sold)).status).to.equal('unknown');
    expect(report.rejected.map((r) => r.field)).to.include('Número do RO');
  });

  it('a cancellation CV after the wrong RO is not taken for Cielo correcting the figure of the sale it cancels', async () => {
    const partner = partnerName('cielo');
    const sold = await stuck(partner, 'order-3001', '25.00', '2026-11-30T13:00:00Z');
    const day1 = cieloFile(fx.dir, 'CIELO03_day1.txt', [
      ro('0000001', '01'),
      cv({ roNumber: '0000001', sign: '+', cents: 2500, nsu: '000101', reference: 'order-3001' }),
    ]);
    const [first] = await reconcile({ pool: fx.sql, reconciler: config(partner, day1), file: day1 });
    expect(first.status, `error: ${first.error}`).to.equal('succeeded');
    expect((await intentRow(fx.sql, sold)).status).to.equal('completed');
    const day2 = cieloFile(fx.dir, 'CIELO03_day2.txt', [
      ro('0000002', '03', '17'),
      ro('0000003', '01'),
      cv({
        roNumber: '0000002',
        sign: '-',
        cents: 2500,
        nsu: '000101',
        reference: 'order-3001',
        date: '20261201',
        time: '000000',
      }),
    ]);
    const [second] = await reconcile({ pool: fx.sql, reconciler: config(partner, day2), file: day2 });
    expect(second.status, `error: ${second.error}`).to.equal('succeeded');
    const reversals = await fx.sql.query(
      `SELECT count(*)::int AS n FROM partner_records WHERE partner = $1 AND kind = 'reversal'`,
      [partner],
    );
    const summaries = (await discrepanciesOf(fx.sql, partner)).map((d) => d.summary as string);
    // Read as an execution with the sale's NSU|reference identity, the refund is taken for Cielo correcting
    // the sale's figure from 25.00 to -25.00 ("The partner corrected its figure..."): a person is told of a
    // correction, not a cancellation. It should be stored as a reversal, or rejected naming its Número do RO.
    expect(
      summaries.filter((s) => s.includes('corrected its figure')),
      'refund shown as a correction',
    ).to.deep.equal([]);
    expect(
      reversals.rows[0].n > 0 || second.rejected.some((r) => r.field === 'Número do RO'),
      'the cancellation is neither a reversal nor a rejected row',
    ).to.equal(true);
  });

  it('a CV signed "-" under a sales RO (a debit, not a sale) completes nothing', async () => {
    const partner = partnerName('cielo');
    const intent = await stuck(partner, 'order-3001', '25.00', '2026-11-30T13:00:00Z');
    const file = cieloFile(fx.dir, 'CIELO03_debit_sale.txt', [
      ro('0000001', '01'),
      cv({ roNumber: '0000001', sign: '-', cents: 2500, nsu: '000101', reference: 'order-3001' }),
    ]);
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    // A sale (Tipo 01) is a credit; a debit there is not a sale Cielo executed for us.
    expect((await intentRow(fx.sql, intent)).status).to.equal('unknown');
    expect(report.rejected.map((r) => r.field)).to.include('Sinal do valor da compra ou valor da parcela');
  });

  it("a chargeback without our order code is not tied to another day's sale that had the same NSU", async () => {
    const partner = partnerName('cielo');
    const a = await stuck(partner, 'order-A', '25.00', '2026-11-30T13:00:00Z');
    const b = await stuck(partner, 'order-B', '40.00', '2026-12-01T13:00:00Z');
    // NSU/DOC numbers a sale within its day: order-A on 30 November and order-B on 1 December both got 000101.
    const day1 = cieloFile(fx.dir, 'CIELO03_a.txt', [
      ro('0000001', '01'),
      cv({ roNumber: '0000001', sign: '+', cents: 2500, nsu: '000101', reference: 'order-A' }),
    ]);
    const day2 = cieloFile(fx.dir, 'CIELO03_b.txt', [
      ro('0000002', '01'),
      cv({
        roNumber: '0000002',
        sign: '+',
        cents: 4000,
        nsu: '000101',
        reference: 'order-B',
        date: '20261201',
      }),
    ]);
    for (const file of [day1, day2]) {
      const [r] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(r.status, `error: ${r.error}`).to.equal('succeeded');
    }
    expect((await intentRow(fx.sql, a)).status).to.equal('completed');
    expect((await intentRow(fx.sql, b)).status).to.equal('completed');
    // order-B's chargeback (its 40.00, dated 5 December), the order code left blank as Cielo may leave it.
    const day3 = cieloFile(fx.dir, 'CIELO03_c.txt', [
      ro('0000003', '03', '28'),
      cv({
        roNumber: '0000003',
        sign: '-',
        cents: 4000,
        nsu: '000101',
        reference: '',
        date: '20261205',
        time: '000000',
      }),
    ]);
    const [third] = await reconcile({ pool: fx.sql, reconciler: config(partner, day3), file: day3 });
    expect(third.status, `error: ${third.error}`).to.equal('succeeded');
    const reversal = await fx.sql.query(
      `SELECT intent_id FROM partner_records WHERE partner = $1 AND kind = 'reversal'`,
      [partner],
    );
    expect(reversal.rows).to.have.length(1);
    // Tied by NSU alone it lands on order-A, the first sale with that NSU: order-A's review shows a chargeback
    // it never had, and order-B's chargeback is nowhere near it.
    expect(reversal.rows[0].intent_id, 'chargeback shown on the wrong order').to.not.equal(a);
  });
});
