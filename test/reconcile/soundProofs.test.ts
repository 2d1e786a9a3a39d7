import { expect } from 'chai';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import {
  type CsvRow,
  completedIntent,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  intentRow,
  minutes,
  partnerName,
  place,
  rejectedIntent,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * Absence needs proof, doubt tells a human, nothing re-opens a partner call on a guess. Each case here was
 * reproduced on the engine before this suite: there, it settled an executed intent `not_executed` (charged
 * again on the next delivery) or a never-executed one `completed` (never collected), or raised the wrong
 * discrepancy. Every report below declares its period unless the case is about reports that do not.
 */
describe('reconcile: sound proofs (ambiguity, declared coverage, duplicates)', () => {
  const fx = useReconcileFixture('rec_proofs');
  let base: Date;
  const at = (m: number) => minutes(base, m);
  const declared = () => ({ coverage: { from: at(0), to: at(480) } });

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  async function run(config: ReconcilerConfig): Promise<ReconciliationResult> {
    const [report] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    return report;
  }

  /** An unknown intent whose attempt started `m` minutes after base (created then too). */
  async function stuck(partner: string, key: string, m: number, overrides = {}): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, key, overrides));
    await place(fx.sql, id, { startedAt: at(m) });
    return id;
  }

  describe('1. the same reference on two intents', () => {
    it('a declined charge and its retry under a new key: the row is the retry`s, which completes', async () => {
      const partner = partnerName('same-ref');
      const declined = await rejectedIntent(fx.ledger, spec(partner, 'order-9'));
      await place(fx.sql, declined, { startedAt: at(50) });
      const retry = await stuck(partner, 'order-9-retry', 60, { reference: 'order-9' });
      const found = await stuck(partner, 'anchor', 60);
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'order-9', nsu: 'NSU-555', amount: '10.00', executedAt: at(61) },
        { reference: 'anchor', nsu: 'NSU-1', amount: '10.00', executedAt: at(62) },
      ]);
      const report = await run(csvReconciler(partner, file, declared()));
      expect(report.resolved).to.deep.equal({ completed: 2, notExecuted: 0 });
      expect(await intentRow(fx.sql, retry)).to.deep.include({
        status: 'completed',
        partner_reference: 'NSU-555',
      });
      expect((await intentRow(fx.sql, declined)).status).to.equal('rejected');
      expect((await intentRow(fx.sql, found)).status).to.equal('completed');
      expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.kind)).to.deep.equal([]);
    });

    it('two stuck intents of one reference, each executed once: neither guessed, both stay, each row ambiguous', async () => {
      const partner = partnerName('two-stuck');
      const first = await stuck(partner, 'order-10-a', 60, { reference: 'order-10' });
      const second = await stuck(partner, 'order-10-b', 70, { reference: 'order-10' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'order-10', nsu: 'NSU-A', amount: '10.00', executedAt: at(61) },
        { reference: 'order-10', nsu: 'NSU-B', amount: '10.00', executedAt: at(71) },
      ]);
      const report = await run(csvReconciler(partner, file, declared()));
      expect(report).to.deep.include({
        matched: 0,
        ambiguous: 2,
        resolved: { completed: 0, notExecuted: 0 },
      });
      for (const id of [first, second]) {
        expect(await intentRow(fx.sql, id)).to.deep.include({ status: 'unknown', resolution: null });
      }
      const found = await discrepanciesOf(fx.sql, partner);
      expect(found.map((d) => [d.kind, d.partner_reference])).to.deep.equal([
        ['ambiguous_match', 'NSU-A'],
        ['ambiguous_match', 'NSU-B'],
      ]);
      for (const d of found) {
        expect(d.details.candidates.map((c: { intentId: string }) => c.intentId)).to.deep.equal([
          first,
          second,
        ]);
        expect(d.partner_record_ids).to.have.length(1);
      }

      // Re-running the same report flags nothing new and still decides nothing.
      const again = await run(csvReconciler(partner, file, declared()));
      expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      expect(again.discrepancies.ambiguous_match).to.equal(0);
    });

    it('one execution listed twice, each row ambiguous: its occurrences count the rows, not their candidates', async () => {
      // Each row has two candidate intents until the rows are decided: numbered over the candidates, the
      // second row took #3 or #4, and an identity a re-run may not give it again.
      const partner = partnerName('twice-ambiguous');
      await stuck(partner, 'order-12-a', 60, { reference: 'order-12' });
      await stuck(partner, 'order-12-b', 70, { reference: 'order-12' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'order-12', nsu: 'NSU-TWICE', amount: '10.00', executedAt: at(71) },
        { reference: 'order-12', nsu: 'NSU-TWICE', amount: '10.00', executedAt: at(72) },
      ]);
      const report = await run(csvReconciler(partner, file, declared()));
      expect(report).to.deep.include({ matched: 0, ambiguous: 2 });
      const stored = async () =>
        (
          await fx.sql.query<{ line: number; identity: string }>(
            'SELECT line, identity FROM partner_records WHERE partner = $1 ORDER BY line',
            [partner],
          )
        ).rows;
      expect(await stored()).to.deep.equal([
        { line: 2, identity: 'NSU-TWICE|order-12#1' },
        { line: 3, identity: 'NSU-TWICE|order-12#2' },
      ]);

      const again = await run(csvReconciler(partner, file, declared()));
      expect(again.discrepancies.ambiguous_match).to.equal(0);
      expect(await stored()).to.have.length(2);
    });

    it('the partner reference pins the row: a completed intent keeps its own, a stranger NSU goes to the stuck one', async () => {
      const partner = partnerName('pinned');
      const paid = await completedIntent(fx.ledger, spec(partner, 'order-11'), 'NSU-PAID');
      await place(fx.sql, paid, { startedAt: at(50) });
      const retry = await stuck(partner, 'order-11-retry', 60, { reference: 'order-11' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'order-11', nsu: 'NSU-PAID', amount: '10.00', executedAt: at(51) },
        { reference: 'order-11', nsu: 'NSU-RETRY', amount: '10.00', executedAt: at(61) },
      ]);
      const report = await run(csvReconciler(partner, file, declared()));
      expect(report).to.deep.include({ matched: 2, ambiguous: 0 });
      expect(await intentRow(fx.sql, retry)).to.deep.include({
        status: 'completed',
        partner_reference: 'NSU-RETRY',
      });
      expect(await intentRow(fx.sql, paid)).to.deep.include({
        status: 'completed',
        partner_reference: 'NSU-PAID',
      });
      expect((await discrepanciesOf(fx.sql, partner)).map((d) => d.kind)).to.deep.equal([]);
    });

    it('an intent created long after the execution cannot be its owner (beyond the clock skew)', async () => {
      const partner = partnerName('time-pins');
      const early = await stuck(partner, 'order-12-a', 60, { reference: 'order-12' });
      const late = await stuck(partner, 'order-12-b', 300, { reference: 'order-12' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'order-12', nsu: 'NSU-EARLY', amount: '10.00', executedAt: at(61) },
      ]);
      await run(csvReconciler(partner, file, declared()));
      expect(await intentRow(fx.sql, early)).to.deep.include({
        status: 'completed',
        partner_reference: 'NSU-EARLY',
      });
      // The later one was created four hours after the only row of its reference was executed: that row
      // cannot be its execution, so the report proves it absent.
      expect((await intentRow(fx.sql, late)).status).to.equal('not_executed');
    });
  });

  describe('2. amount matching', () => {
    const byAmount = { by: 'amount', amountTolerance: '0.01', timeWindow: '10m' } as const;

    it('two candidates: A 50.00 at 10:00:00 and B 50.00 at 10:00:10, the row at 10:00:09 decides neither', async () => {
      const partner = partnerName('two-candidates');
      const a = await stuck(partner, 'A', 60, { amount: '50.00' });
      const b = await stuck(partner, 'B', 60, { amount: '50.00' });
      await place(fx.sql, b, { startedAt: new Date(at(60).getTime() + 10_000) });
      const other = await stuck(partner, 'other', 200, { amount: '7.00' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { nsu: 'P-1', amount: '50.00', executedAt: new Date(at(60).getTime() + 9_000) },
        { nsu: 'P-2', amount: '7.00', executedAt: at(201) },
      ]);
      const report = await run(csvReconciler(partner, file, { ...declared(), match: byAmount }));
      expect(report).to.deep.include({
        matched: 1,
        ambiguous: 1,
        resolved: { completed: 1, notExecuted: 0 },
      });
      for (const id of [a, b]) {
        expect(await intentRow(fx.sql, id)).to.deep.include({ status: 'unknown', resolution: null });
      }
      expect((await intentRow(fx.sql, other)).status).to.equal('completed');
      const found = await discrepanciesOf(fx.sql, partner);
      expect(found.map((d) => d.kind)).to.deep.equal(['ambiguous_match']);
      expect(found[0].details.candidates.map((c: { intentId: string }) => c.intentId)).to.deep.equal([a, b]);
    });

    it('near misses keep an intent from being proven absent: 0.011 off under 0.01, a partner clock 12 minutes off', async () => {
      const partner = partnerName('near-miss');
      const offByCents = await stuck(partner, 'cents', 60, { amount: '10.00' });
      const offByClock = await stuck(partner, 'clock', 120, { amount: '20.00' });
      const absent = await stuck(partner, 'absent', 180, { amount: '30.00' });
      const found = await stuck(partner, 'found', 240, { amount: '40.00' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { nsu: 'P-CENTS', amount: '10.011', executedAt: at(61) },
        { nsu: 'P-CLOCK', amount: '20.00', executedAt: at(132) },
        { nsu: 'P-FOUND', amount: '40.00', executedAt: at(241) },
      ]);
      const report = await run(csvReconciler(partner, file, { ...declared(), match: byAmount }));
      expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
      for (const id of [offByCents, offByClock]) {
        expect(await intentRow(fx.sql, id)).to.deep.include({ status: 'unknown', resolution: null });
      }
      expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
      expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    });

    it('the near-miss margin widens by clockSkew: a row 40 minutes early may be the execution when clocks may be 45 minutes apart', async () => {
      // The default near-miss window is 3 x 10m = 30m. A row 40 minutes before the attempt's start is outside
      // it, but a partner clock up to 45 minutes off dates the execution that early.
      for (const [clockSkew, expected] of [
        ['0s', 'not_executed'],
        ['45m', 'unknown'],
      ] as const) {
        const partner = partnerName(`near-miss-skew-${clockSkew}`);
        const skewed = await stuck(partner, 'skewed', 120, { amount: '25.00' });
        const found = await stuck(partner, 'found', 240, { amount: '40.00' });
        const file = writeCsv(fx.dir, `${partner}.csv`, [
          { nsu: 'P-EARLY', amount: '25.00', executedAt: at(80) },
          { nsu: 'P-FOUND', amount: '40.00', executedAt: at(241) },
        ]);
        await run(csvReconciler(partner, file, { ...declared(), match: byAmount, clockSkew }));
        expect((await intentRow(fx.sql, found)).status, clockSkew).to.equal('completed');
        expect((await intentRow(fx.sql, skewed)).status, clockSkew).to.equal(expected);
      }
    });

    it('the near-miss margin is configurable, and never narrower than the match rule', async () => {
      const partner = partnerName('near-miss-config');
      const cents = await stuck(partner, 'cents', 60, { amount: '10.00' });
      const found = await stuck(partner, 'found', 240, { amount: '40.00' });
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { nsu: 'P-CENTS', amount: '10.02', executedAt: at(61) },
        { nsu: 'P-FOUND', amount: '40.00', executedAt: at(241) },
      ]);
      const nearMiss = { amountTolerance: '0.01', timeWindow: '10m' };
      await run(csvReconciler(partner, file, { ...declared(), match: { ...byAmount, nearMiss } }));
      // 0.02 off, outside a near-miss margin configured as tight as the rule itself: proven absent.
      expect((await intentRow(fx.sql, cents)).status).to.equal('not_executed');
      expect((await intentRow(fx.sql, found)).status).to.equal('completed');
      const narrower = { ...byAmount, nearMiss: { amountTolerance: '0.001' } };
      const [refused] = await reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file, { ...declared(), match: narrower }),
      }).catch((error: Error) => [{ error: error.message }]);
      expect(String((refused as { error: string }).error)).to.contain(
        'match.nearMiss.amountTolerance must not be below match.amountTolerance',
      );
    });
  });

  describe('3. coverage is declared, never inferred from the rows', () => {
    async function scenario(partner: string) {
      const executed = await stuck(partner, 'executed', 60);
      const absent = await stuck(partner, 'absent', 120);
      return { executed, absent };
    }

    it('without a declaration a report completes what it shows but proves nothing absent, and says so', async () => {
      const partner = partnerName('undeclared');
      const { executed, absent } = await scenario(partner);
      // A file sorted by NSU and cut at a line end: the executed intent's row is among the lost ones,
      // and what is left spans the whole period, as the complete file would.
      const rows: CsvRow[] = [
        { reference: 'executed', nsu: 'A-1', amount: '10.00', executedAt: at(61) },
        { reference: 'someone', nsu: 'A-2', amount: '10.00', executedAt: at(0) },
        { reference: 'someone-else', nsu: 'A-3', amount: '10.00', executedAt: at(480) },
      ];
      const cut = writeCsv(fx.dir, `${partner}-cut.csv`, rows.slice(1));
      const report = await run(csvReconciler(partner, cut));
      expect(report.coverage).to.equal(null);
      expect(report.warnings.join(' ')).to.contain('declares no coverage');
      expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      for (const id of [executed, absent]) expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
      const run_ = await fx.sql.query('SELECT warnings FROM reconciliation_runs WHERE id = $1', [
        report.runId,
      ]);
      expect(run_.rows[0].warnings).to.deep.equal(report.warnings);
    });

    it("another partner's file with the same headers: 0 of 200 rows match, nothing is proven absent", async () => {
      const partner = partnerName('wrong-file');
      const { executed, absent } = await scenario(partner);
      const rows = Array.from({ length: 200 }, (_, n) => ({
        reference: `theirs-${n}`,
        nsu: `T-${n}`,
        amount: '10.00',
        executedAt: at(n * 2),
      }));
      const file = writeCsv(fx.dir, `${partner}.csv`, rows);
      const report = await run(csvReconciler(partner, file, declared()));
      expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      expect(report.warnings.join(' '))
        .to.contain('0 of 200 rows match')
        .and.contain('wrong partner or wrong file?');
      for (const id of [executed, absent]) expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
    });

    it('a row dated 2062 or three hours ahead is rejected, named, and stretches nothing; the period ends at the run', async () => {
      const partner = partnerName('future-rows');
      const { executed, absent } = await scenario(partner);
      const now = await dbNow(fx.sql);
      const file = writeCsv(fx.dir, `${partner}.csv`, [
        { reference: 'executed', nsu: 'F-1', amount: '10.00', executedAt: at(61) },
        { reference: 'future', nsu: 'F-2', amount: '10.00', executedAt: '2062-01-01T00:00:00Z' },
        { reference: 'ahead', nsu: 'F-3', amount: '10.00', executedAt: minutes(now, 180) },
      ]);
      // Declared until far ahead: the run's start caps it.
      const report = await run(
        csvReconciler(partner, file, {
          coverage: { from: at(0), to: '2100-01-01T00:00:00Z' },
          maxRejectedRatio: 0.9,
        }),
      );
      expect(report.coverage!.to.getTime()).to.be.at.most(Date.now());
      expect(report.coverage!.to.getTime()).to.be.at.least(now.getTime() - 1000);
      expect(report.rejected.map((r) => [r.line, r.field])).to.deep.equal([
        [3, 'executed_at'],
        [4, 'executed_at'],
      ]);
      expect(report.rejected[0].reason).to.match(/^executed at 2062-01-01T00:00:00Z, outside the period/);
      expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
      expect((await intentRow(fx.sql, executed)).status).to.equal('completed');
      expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    });

    it('a date in the file name declares that day in the reconciler`s zone, capped at the run`s start', async () => {
      const partner = partnerName('file-date');
      const now = await dbNow(fx.sql);
      // A day that began at least 6 hours ago in UTC, so its intents are past the settlement lag.
      const day = new Date(now.getTime() - 6 * 3_600_000).toISOString().slice(0, 10);
      const dayStart = new Date(`${day}T00:00:00Z`);
      const executed = await unknownIntent(fx.ledger, spec(partner, 'executed'));
      await place(fx.sql, executed, { startedAt: minutes(dayStart, 10) });
      const absent = await unknownIntent(fx.ledger, spec(partner, 'absent'));
      await place(fx.sql, absent, { startedAt: minutes(dayStart, 20) });
      // Before the day the file is for: its absence proves nothing.
      const before = await unknownIntent(fx.ledger, spec(partner, 'before'));
      await place(fx.sql, before, { startedAt: minutes(dayStart, -120) });
      const rows = [
        { reference: 'executed', nsu: 'D-1', amount: '10.00', executedAt: minutes(dayStart, 11) },
      ];
      const coverage = { fromFileName: { pattern: '^settlement-(\\d{4}-\\d{2}-\\d{2})\\.csv$' } };
      const file = writeCsv(fx.dir, `settlement-${day}.csv`, rows);
      const report = await run({ ...csvReconciler(partner, file), coverage, timezone: 'UTC' });
      expect(report.coverage!.from).to.deep.equal(dayStart);
      expect(report.coverage!.to.getTime()).to.be.at.most(
        Math.min(Date.now(), dayStart.getTime() + 86_400_000),
      );
      expect((await intentRow(fx.sql, executed)).status).to.equal('completed');
      expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
      expect((await intentRow(fx.sql, before)).status).to.equal('unknown');

      // A file whose name carries no date declares nothing.
      const other = partnerName('file-no-date');
      const stuckThere = await unknownIntent(fx.ledger, spec(other, 'absent'));
      await place(fx.sql, stuckThere, { startedAt: minutes(dayStart, 20) });
      const found = await unknownIntent(fx.ledger, spec(other, 'executed'));
      await place(fx.sql, found, { startedAt: minutes(dayStart, 10) });
      const undated = writeCsv(fx.dir, 'settlement-latest.csv', rows);
      const none = await run({ ...csvReconciler(other, undated), coverage, timezone: 'UTC' });
      expect(none.coverage).to.equal(null);
      expect(none.warnings.join(' ')).to.contain('does not carry a date');
      expect((await intentRow(fx.sql, stuckThere)).status).to.equal('unknown');
      expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    });
  });

  describe('5. corrections and identity', () => {
    it('a re-issued file changes NSU C1 from 10.00 to 100.00: an amount_mismatch shows both figures, once', async () => {
      const partner = partnerName('corrected');
      const id = await stuck(partner, 'order-5', 60);
      const first = writeCsv(fx.dir, `${partner}-first.csv`, [
        { reference: 'order-5', nsu: 'C1', amount: '10.00', executedAt: at(61) },
      ]);
      await run(csvReconciler(partner, first, declared()));
      expect(await intentRow(fx.sql, id)).to.deep.include({ status: 'completed', partner_reference: 'C1' });
      expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);

      const reissued = writeCsv(fx.dir, `${partner}-reissued.csv`, [
        { reference: 'order-5', nsu: 'C1', amount: '100.00', executedAt: at(61) },
      ]);
      const report = await run(csvReconciler(partner, reissued, declared()));
      expect(report.discrepancies).to.include({ amount_mismatch: 1, duplicate_execution: 0 });
      const [found] = await discrepanciesOf(fx.sql, partner);
      expect(found).to.deep.include({ kind: 'amount_mismatch', intent_id: id, amount_at_risk: '90.00' });
      expect(found.details.before).to.include({ amount: '10.00', currency: 'BRL' });
      expect(found.details.now).to.include({ amount: '100.00', currency: 'BRL' });
      expect(found.summary).to.contain('10.00 BRL before, 100.00 BRL now');

      // Either file again: nothing new.
      for (const file of [reissued, first]) {
        const again = await run(csvReconciler(partner, file, declared()));
        expect(Object.values(again.discrepancies).reduce((a, b) => a + b, 0)).to.equal(0);
      }
    });

    it('without partner references, a corrected amount at the same reference and time is a correction, not a second execution', async () => {
      const partner = partnerName('corrected-no-nsu');
      const id = await stuck(partner, 'order-51', 60);
      const row = (amount: string): CsvRow => ({ reference: 'order-51', amount, executedAt: at(61) });
      await run(csvReconciler(partner, writeCsv(fx.dir, `${partner}-1.csv`, [row('10.00')]), declared()));
      await run(csvReconciler(partner, writeCsv(fx.dir, `${partner}-2.csv`, [row('12.00')]), declared()));
      expect((await intentRow(fx.sql, id)).status).to.equal('completed');
      const kinds = (await discrepanciesOf(fx.sql, partner)).map((d) => [d.kind, d.amount_at_risk]);
      expect(kinds).to.deep.equal([['amount_mismatch', '2.00']]);
    });

    it('an NSU the partner reuses the next day for another order is that order`s execution, with no invented mismatch', async () => {
      const partner = partnerName('reused-nsu');
      const monday = await stuck(partner, 'order-52', 60);
      const tuesday = await stuck(partner, 'order-53', 300, { amount: '25.00' });
      // Each day's file declares its own day.
      await run(
        csvReconciler(
          partner,
          writeCsv(fx.dir, `${partner}-mon.csv`, [
            { reference: 'order-52', nsu: 'N-7', amount: '10.00', executedAt: at(61) },
          ]),
          { coverage: { from: at(0), to: at(200) } },
        ),
      );
      const report = await run(
        csvReconciler(
          partner,
          writeCsv(fx.dir, `${partner}-tue.csv`, [
            { reference: 'order-53', nsu: 'N-7', amount: '25.00', executedAt: at(301) },
          ]),
          { coverage: { from: at(200), to: at(480) } },
        ),
      );
      expect(report.resolved.completed).to.equal(1);
      expect(await intentRow(fx.sql, tuesday)).to.deep.include({
        status: 'completed',
        partner_reference: 'N-7',
      });
      expect((await intentRow(fx.sql, monday)).status).to.equal('completed');
      expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
      const records = await fx.sql.query(
        'SELECT identity FROM partner_records WHERE partner = $1 ORDER BY id',
        [partner],
      );
      expect(records.rows.map((r) => r.identity)).to.deep.equal(['N-7|order-52#1', 'N-7|order-53#1']);
    });
  });

  describe('6. duplicates keep up with the partner', () => {
    it('a third execution updates the open duplicate to 20.00 at risk; after it is resolved, a fourth opens a new one', async () => {
      const partner = partnerName('third');
      const id = await stuck(partner, 'order-6', 60);
      const rows = (n: number): CsvRow[] =>
        Array.from({ length: n }, (_, k) => ({
          reference: 'order-6',
          nsu: `E-${k + 1}`,
          amount: '10.00',
          executedAt: at(61 + k),
        }));
      const write = (name: string, n: number) => writeCsv(fx.dir, `${partner}-${name}.csv`, rows(n));
      await run(csvReconciler(partner, write('two', 2), declared()));
      let [duplicate] = await discrepanciesOf(fx.sql, partner);
      expect(duplicate).to.deep.include({
        kind: 'duplicate_execution',
        amount_at_risk: '10.00',
        status: 'open',
      });
      expect(duplicate.details.executions).to.equal(2);

      const third = await run(csvReconciler(partner, write('three', 3), declared()));
      expect(third.discrepancies.duplicate_execution).to.equal(0); // updated, not new
      const all = await discrepanciesOf(fx.sql, partner);
      expect(all).to.have.length(1);
      [duplicate] = all;
      expect(duplicate).to.deep.include({ amount_at_risk: '20.00', status: 'open', intent_id: id });
      expect(duplicate.details.executions).to.equal(3);
      expect(
        duplicate.details.rows.map((r: { partnerReference: string }) => r.partnerReference),
      ).to.deep.equal(['E-1', 'E-2', 'E-3']);
      expect(duplicate.partner_record_ids).to.have.length(3);
      expect(duplicate.summary).to.contain('3 times').and.contain('20.00 BRL charged beyond it');
      expect(duplicate.history.map((h: { to: string }) => h.to)).to.deep.equal(['open', 'open']);

      // The same report again changes nothing.
      await run(csvReconciler(partner, write('three-again', 3), declared()));
      expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal(all);

      const ids = await fx.sql.query<{ id: string }>(
        `SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'duplicate_execution'`,
        [partner],
      );
      await reviewDiscrepancies(fx.sql, [ids.rows[0].id], 'resolve', { note: 'refunded twice', by: 'Ana' });
      const fourth = await run(csvReconciler(partner, write('four', 4), declared()));
      expect(fourth.discrepancies.duplicate_execution).to.equal(1);
      const after = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.kind === 'duplicate_execution');
      expect(after.map((d) => [d.status, d.amount_at_risk, d.details.executions])).to.deep.equal([
        ['resolved', '20.00', 3],
        ['open', '30.00', 4],
      ]);
    });
  });
});
