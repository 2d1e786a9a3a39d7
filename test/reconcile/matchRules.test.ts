import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import {
  completedIntent,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  intentRow,
  minutes,
  noDiscrepancies,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

describe('reconcile: match rules', () => {
  const fx = useReconcileFixture('rec_match');
  let base: Date;
  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  describe('by amount (tolerance, time window, a row that fits several intents decides none)', () => {
    const partner = partnerName('amount');
    const ids: Record<string, string> = {};
    let report: Awaited<ReturnType<typeof reconcile>>[number];

    before(async () => {
      const at = (m: number) => minutes(base, m);
      const stuck = async (name: string, amount: string, start: number, currency = 'BRL') => {
        ids[name] = await unknownIntent(fx.ledger, spec(partner, name, { amount, currency }));
        await place(fx.sql, ids[name], { startedAt: at(start) });
      };
      await stuck('within', '10.00', 60); // row 10.03 three minutes later: matched, amount differs
      // Row 25 minutes later: outside the 10m window, inside the 30m near-miss window: not proven absent.
      await stuck('too-late', '20.00', 100);
      await stuck('c', '30.00', 200); // rows at 203 and 204 each fit c and d: ambiguous, neither decided
      await stuck('d', '30.00', 210);
      await stuck('usd', '40.00', 250, 'USD'); // row in BRL: never a candidate, absent
      await stuck('edge', '10.10', 300); // row 10.15: exactly the tolerance (a float says 0.05000000000000071)
      // Row 50.06: over the 0.05 tolerance, inside the near-miss margin (0.50): not proven absent.
      await stuck('over', '50.00', 320);
      // Rows carry no reference of ours, only the partner's id.
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { nsu: 'A-WITHIN', amount: '10.03', executedAt: at(63) },
        { nsu: 'A-LATE', amount: '20.00', executedAt: at(125) },
        { nsu: 'A-R1', amount: '30.00', executedAt: at(204) },
        { nsu: 'A-R2', amount: '30.00', executedAt: at(203) },
        { nsu: 'A-USD', amount: '40.00', currency: 'BRL', executedAt: at(250) },
        { nsu: 'A-EDGE', amount: '10.15', executedAt: at(302) },
        { nsu: 'A-OVER', amount: '50.06', executedAt: at(321) },
        { nsu: 'A-END', amount: '1.00', executedAt: at(480) },
      ]);
      [report] = await reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file, {
          match: { by: 'amount', amountTolerance: '0.05', timeWindow: '10m' },
          coverage: { from: at(0), to: at(480) },
        }),
      });
    });

    it('pairs within the tolerance (compared exactly) and the window; near misses are never proven absent', async () => {
      expect(report).to.deep.include({
        status: 'succeeded',
        rowsRead: 8,
        matched: 2,
        ambiguous: 2,
        resolved: { completed: 2, notExecuted: 1 },
        discrepancies: {
          ...noDiscrepancies(),
          amount_mismatch: 2,
          orphan_partner_record: 4,
          ambiguous_match: 2,
        },
      });
      expect(await intentRow(fx.sql, ids.within)).to.deep.include({
        status: 'completed',
        partner_reference: 'A-WITHIN',
      });
      expect(await intentRow(fx.sql, ids.edge)).to.deep.include({
        status: 'completed',
        partner_reference: 'A-EDGE',
      });
      expect((await intentRow(fx.sql, ids.usd)).status).to.equal('not_executed');
      for (const name of ['too-late', 'over']) {
        expect(await intentRow(fx.sql, ids[name]), name).to.deep.include({
          status: 'unknown',
          resolution: null,
        });
      }
    });

    it('a row that fits two intents decides neither: both stay unknown and an ambiguous_match names both', async () => {
      for (const name of ['c', 'd']) {
        expect(await intentRow(fx.sql, ids[name]), name).to.deep.include({
          status: 'unknown',
          resolution: null,
          partner_reference: null,
        });
      }
      const ambiguous = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.kind === 'ambiguous_match');
      expect(ambiguous.map((d) => d.partner_reference)).to.deep.equal(['A-R1', 'A-R2']);
      for (const found of ambiguous) {
        expect(found).to.deep.include({ intent_id: null, amount_at_risk: '30.00', currency: 'BRL' });
        expect(found.details.candidates.map((c: { intentId: string }) => c.intentId)).to.deep.equal([
          ids.c,
          ids.d,
        ]);
        expect(found.summary).to.contain('could be the execution of 2 intents');
      }
      const kinds = (await discrepanciesOf(fx.sql, partner)).map((d) => [
        d.kind,
        d.partner_reference,
        d.amount_at_risk,
      ]);
      expect(kinds).to.deep.equal([
        ['ambiguous_match', 'A-R1', '30.00'],
        ['ambiguous_match', 'A-R2', '30.00'],
        ['amount_mismatch', 'A-WITHIN', '0.03'],
        ['amount_mismatch', 'A-EDGE', '0.05'],
        ['orphan_partner_record', 'A-END', '1.00'],
        ['orphan_partner_record', 'A-LATE', '20.00'],
        ['orphan_partner_record', 'A-OVER', '50.06'],
        ['orphan_partner_record', 'A-USD', '40.00'],
      ]);
    });
  });

  describe('by partner reference', () => {
    const partner = partnerName('nsu');
    const ids: Record<string, string> = {};
    let report: Awaited<ReturnType<typeof reconcile>>[number];

    before(async () => {
      const at = (m: number) => minutes(base, m);
      const completed = async (name: string, nsu: string, start: number) => {
        ids[name] = await completedIntent(fx.ledger, spec(partner, name), nsu);
        await place(fx.sql, ids[name], { startedAt: at(start) });
      };
      await completed('same', 'P-SAME', 60);
      await completed('differs', 'P-DIFFERS', 90);
      await completed('gone', 'P-GONE', 120);
      // Stuck without a partner reference: under this rule nothing can match it, so its absence proves nothing.
      ids.stuck = await unknownIntent(fx.ledger, spec(partner, 'stuck'));
      await place(fx.sql, ids.stuck, { startedAt: at(150) });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'their-1', nsu: 'P-SAME', amount: '10.00', executedAt: at(0) },
        { reference: 'their-2', nsu: 'P-DIFFERS', amount: '11.00', executedAt: at(91) },
        { reference: 'stuck', nsu: 'P-UNKNOWN', amount: '10.00', executedAt: at(151) },
        { nsu: 'P-LAST', amount: '3.00', executedAt: at(480) },
      ]);
      [report] = await reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file, {
          match: { by: 'partnerReference' },
          coverage: { from: at(0), to: at(480) },
        }),
      });
    });

    it('matches on the partner reference only, and checks completed intents inside the coverage', async () => {
      expect(report).to.deep.include({
        status: 'succeeded',
        matched: 2,
        resolved: { completed: 0, notExecuted: 0 },
        discrepancies: {
          ...noDiscrepancies(),
          amount_mismatch: 1,
          missing_at_partner: 1,
          orphan_partner_record: 2,
        },
      });
      const found = (await discrepanciesOf(fx.sql, partner)).map((d) => [
        d.kind,
        d.intent_id,
        d.amount_at_risk,
      ]);
      expect(found).to.deep.equal([
        ['amount_mismatch', ids.differs, '1.00'],
        ['missing_at_partner', ids.gone, '10.00'],
        ['orphan_partner_record', null, '3.00'],
        ['orphan_partner_record', null, '10.00'],
      ]);
    });

    it('a stuck intent without a partner reference is not declared not_executed', async () => {
      expect(await intentRow(fx.sql, ids.stuck)).to.deep.include({ status: 'unknown', resolution: null });
    });
  });
});
