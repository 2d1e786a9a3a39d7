import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  completedIntent,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  intentRow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * An execution that names no intent we know (no reference of ours, and a partner reference that is no
 * intent's) may be any stuck intent's: the run proves none absent. One whose partner reference is an intent's
 * names that intent, and proves as before. (The shipped Twilio reconciler's `match.shape` cases are in
 * partners/twilio.test.ts.)
 */
describe('reconcile: an execution that names nobody proves no intent absent', () => {
  const fx = useReconcileFixture('rec_anonymous');
  let base: Date;
  const at = (m: number) => minutes(base, m);

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  async function stuck(partner: string, key: string, m: number): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, key));
    await place(fx.sql, id, { startedAt: at(m) });
    return id;
  }

  it('a row with only the partner`s NSU, which no intent has: every absent intent stays stuck, and the run says why', async () => {
    const partner = partnerName('anonymous');
    const listed = await stuck(partner, 'order-1', 60);
    const unlisted = await stuck(partner, 'order-2', 120);
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'order-1', nsu: 'NSU-1', amount: '10.00', executedAt: at(61) },
      // Perhaps order-2's charge, listed without our order code.
      { nsu: 'NSU-2', amount: '10.00', executedAt: at(121) },
    ]);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, { coverage: { from: at(0), to: at(480) } }),
    });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect((await intentRow(fx.sql, listed)).status).to.equal('completed');
    expect((await intentRow(fx.sql, unlisted)).status).to.equal('unknown');
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    expect(report.warnings).to.include(
      "1 executions carry no reference and name no intent we know: each could be any stuck intent's " +
        'execution, so this run proves no intent absent',
    );
    const orphans = (await discrepanciesOf(fx.sql, partner)).filter(
      (d) => d.kind === 'orphan_partner_record',
    );
    expect(orphans.map((d) => d.partner_reference)).to.deep.equal(['NSU-2']);
  });

  it('a row without our reference whose NSU is an intent`s names that intent: the absent one is proven absent', async () => {
    const partner = partnerName('named-by-nsu');
    await completedIntent(fx.ledger, spec(partner, 'order-1'), 'NSU-1');
    const listed = await stuck(partner, 'order-2', 60);
    const unlisted = await stuck(partner, 'order-3', 120);
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { nsu: 'NSU-1', amount: '10.00', executedAt: at(30) },
      { reference: 'order-2', nsu: 'NSU-2', amount: '10.00', executedAt: at(61) },
    ]);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, { coverage: { from: at(0), to: at(480) } }),
    });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect((await intentRow(fx.sql, listed)).status).to.equal('completed');
    expect((await intentRow(fx.sql, unlisted)).status).to.equal('not_executed');
    expect(report.warnings.filter((w) => w.includes('name no intent we know'))).to.deep.equal([]);
  });
});
