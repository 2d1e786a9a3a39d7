import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import {
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
 * A header that names a column twice: for the mapped columns (reference, amount, ...) the run fails, since
 * picking one of the two is a guess about which one the partner meant. The columns a row-kind rule or an
 * amount convention reads are columns the row is read by all the same: the first of two was taken without a
 * word, so a refund whose kind is in the second `type` column was read as an execution (a false duplicate),
 * and an amount in the second credit column was read from the first.
 */
describe('reconcile: a column named twice in the header', () => {
  const fx = useReconcileFixture('rec_dupcols');
  let base: Date;
  const at = (m: number) => minutes(base, m).toISOString();

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  function reconciler(partner: string, path: string, source: Partial<CsvSourceConfig>): ReconcilerConfig {
    return {
      partner,
      schedule: '*/15 * * * *',
      stuckAfter: '15m',
      settlementLag: '1h',
      deadline: '3d',
      source: {
        type: 'csv',
        path,
        columns: {
          reference: 'reference',
          partnerReference: 'psp',
          amount: 'amount',
          currency: 'currency',
          executedAt: 'executed_at',
        },
        ...source,
      },
    };
  }

  function write(name: string, lines: readonly string[]): string {
    const path = join(fx.dir, name);
    writeFileSync(path, `${lines.join('\n')}\n`);
    return path;
  }

  async function stuck(partner: string, ref: string, m: number): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, ref));
    await place(fx.sql, id, { startedAt: minutes(base, m) });
    return id;
  }

  it('a row-kind column named twice fails the run naming it; nothing is applied', async () => {
    const partner = partnerName('dup-kind');
    const id = await stuck(partner, 'order-1', 60);
    const path = write(`${partner}.csv`, [
      'type,reference,psp,amount,currency,executed_at,type',
      `Settled,order-1,PSP-1,10.00,BRL,${at(61)},Settled`,
      `Settled,order-1,PSP-1,-10.00,BRL,${at(200)},Refunded`,
    ]);
    const before = await snapshot(fx.sql);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: reconciler(partner, path, {
        kind: { column: 'type', values: { Settled: 'execution', Refunded: 'reversal' } },
      }),
    });
    expect(report.status, `the refund was read by the first "type" column`).to.equal('failed');
    expect(report.error).to.contain('"type"');
    expect(report.error).to.contain('appears 2 times');
    expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });

  it('a debit or credit column named twice fails the run naming it', async () => {
    const partner = partnerName('dup-credit');
    const id = await stuck(partner, 'order-2', 60);
    const path = write(`${partner}.csv`, [
      'reference,psp,debit,credit,currency,executed_at,credit',
      `order-2,PSP-2,,1.00,BRL,${at(61)},10.00`,
    ]);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: reconciler(partner, path, {
        columns: {
          reference: 'reference',
          partnerReference: 'psp',
          currency: 'currency',
          executedAt: 'executed_at',
        },
        amount: { debitCredit: { debit: 'debit', credit: 'credit' } },
      }),
    });
    expect(report.status, 'the amount was read from the first "credit" column').to.equal('failed');
    expect(report.error).to.contain('"credit"');
    expect(report.error).to.contain('appears 2 times');
    expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
  });
});
