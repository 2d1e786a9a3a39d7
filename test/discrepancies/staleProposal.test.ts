import { expect } from 'chai';
import { setApprovalThreshold } from '../../src/discrepancies/approvalThresholds.js';
import { decideProposal, propose } from '../../src/discrepancies/fourEyes.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { rejectionOf } from '../support/fixtures.js';
import {
  type CsvRow,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from '../reconcile/support.js';

/**
 * Four eyes approves what the proposer saw. A duplicate that is still open keeps up with the partner (a
 * further execution raises its amount at risk, raiseFlags.ts), so a proposal made before that is about a
 * smaller problem than the one a second resolver would apply it to.
 */
describe('four eyes: a proposal does not outlive a change of the amount it was made on', function () {
  this.timeout(60_000);
  const fx = useReconcileFixture('stale_proposal');
  let base: Date;
  const at = (m: number) => minutes(base, m);

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
    await setApprovalThreshold(fx.sql, { threshold: '100.00', by: 'finance', note: 'policy FP-7' });
  });

  async function run(config: ReconcilerConfig): Promise<ReconciliationResult> {
    const [report] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    return report;
  }

  it('a third execution after the proposal to dismiss: the approval is refused, nothing is dismissed', async () => {
    const partner = partnerName('stale');
    const intent = await unknownIntent(fx.ledger, spec(partner, 'order-7', { amount: '150.00' }));
    await place(fx.sql, intent, { startedAt: at(60) });
    const rows = (n: number): CsvRow[] =>
      Array.from({ length: n }, (_, k) => ({
        reference: 'order-7',
        nsu: `E-${k + 1}`,
        amount: '150.00',
        executedAt: at(61 + k),
      }));
    const report = (name: string, n: number) =>
      csvReconciler(partner, writeCsv(fx.dir, `${partner}-${name}.csv`, rows(n)), {
        coverage: { from: at(0), to: at(480) },
      });

    await run(report('two', 2));
    const [duplicate] = await discrepanciesOf(fx.sql, partner);
    expect(duplicate).to.deep.include({ kind: 'duplicate_execution', amount_at_risk: '150.00' });
    const id = (
      await fx.sql.query<{ id: string }>(
        `SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'duplicate_execution'`,
        [partner],
      )
    ).rows[0].id;
    await propose(fx.sql, id, 'dismiss', {
      note: 'the partner refunds the second charge of 150.00 tomorrow',
      by: 'ana',
    });

    // Next morning's report: a third charge. The open duplicate now has 300.00 at risk.
    await run(report('three', 3));
    const [grown] = await discrepanciesOf(fx.sql, partner);
    expect(grown).to.deep.include({ amount_at_risk: '300.00', status: 'open' });

    // Bea approves "Ana's proposal": nobody ever looked at the third charge.
    const refused = await rejectionOf(
      decideProposal(fx.sql, id, 'approve', { note: 'ok, refund confirmed', by: 'bea' }),
    );
    expect(refused, 'a proposal made at 150.00 at risk applied to 300.00').to.be.instanceOf(Error);
    const [after] = await discrepanciesOf(fx.sql, partner);
    expect(after.status).to.equal('open');
  });
});
