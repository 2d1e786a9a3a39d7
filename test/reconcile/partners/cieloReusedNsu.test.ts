import { expect } from 'chai';
import cielo from '../../../reconcilers/cielo.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { discrepanciesOf, intentRow, partnerName } from '../support.js';
import { CIELO_FIXTURE, cieloFile, cv, ro } from './cieloRecords.js';
import { useShippedPartner } from './shippedPartner.js';

/**
 * Cielo's NSU numbers a sale within its day and comes round again ("não é único e pode se repetir"): the same
 * order charged again another day may carry the NSU of its first sale. That second sale is a second
 * execution, never a re-read of the first.
 */
describe('cielo: an NSU that comes round again for the same order another day is a second sale', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'cielo_reused_nsu',
    reconciler: cielo,
    fixture: CIELO_FIXTURE,
    currency: 'BRL',
  });

  /** A sales file of one sale of order-5001 for 25.00 with `nsu` on `date`. */
  function sale(partner: string, name: string, nsu: string, date: string): string {
    return cieloFile(fx.dir, `${partner}_${name}.txt`, [
      ro('0000001', '01'),
      cv({ roNumber: '0000001', sign: '+', cents: 2500, nsu, reference: 'order-5001', date }),
    ]);
  }

  async function run(partner: string, file: string) {
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    return report;
  }

  const records = async (partner: string) =>
    (
      await fx.sql.query<{ identity: string }>(
        'SELECT identity FROM partner_records WHERE partner = $1 ORDER BY id',
        [partner],
      )
    ).rows.map((r) => r.identity);

  it('the second sale is stored and raised as a double execution, once, whatever order the files are read in', async () => {
    for (const order of ['first day first', 'second day first'] as const) {
      const partner = partnerName('reused-nsu');
      const intent = await stuck(partner, 'order-5001', '25.00', '2026-11-30T13:00:00Z');
      const first = sale(partner, 'day1', '000101', '20261130');
      const second = sale(partner, 'day2', '000101', '20261201');
      const files = order === 'first day first' ? [first, second] : [second, first];
      for (const file of files) await run(partner, file);
      expect((await intentRow(fx.sql, intent)).status, order).to.equal('completed');
      expect(await records(partner), order).to.have.length(2);
      const raised = async () =>
        (await discrepanciesOf(fx.sql, partner)).map((d) => [d.kind, d.intent_id, d.amount_at_risk]);
      expect(await raised(), order).to.deep.equal([['duplicate_execution', intent, '25.00']]);

      // Both files again, in both orders: each row is found where it was stored, nothing new.
      for (const file of [...files, ...[...files].reverse()]) {
        const report = await run(partner, file);
        expect(report.resolved, order).to.deep.equal({ completed: 0, notExecuted: 0 });
      }
      expect(await records(partner), order).to.have.length(2);
      expect(await raised(), order).to.deep.equal([['duplicate_execution', intent, '25.00']]);
    }
  });

  it('the same NSU and order on the same day is the same sale: a re-issued file stores nothing new', async () => {
    const partner = partnerName('same-day-nsu');
    await stuck(partner, 'order-5001', '25.00', '2026-11-30T13:00:00Z');
    await run(partner, sale(partner, 'day1', '000101', '20261130'));
    await run(partner, sale(partner, 'day1-reissued', '000101', '20261130'));
    expect(await records(partner)).to.deep.equal(['000101|order-5001#1']);
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
  });
});
