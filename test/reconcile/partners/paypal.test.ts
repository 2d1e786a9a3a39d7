import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import paypal from '../../../reconcilers/paypal.js';
import { getDiscrepancy } from '../../../src/discrepancies/getDiscrepancy.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import { validateReconciler } from '../../../src/reconcile/validateReconciler.js';
import {
  discrepanciesOf,
  intentRow,
  noDiscrepancies,
  partnerName,
  place,
  spec,
  unknownIntent,
} from '../support.js';
import { useShippedPartner } from './shippedPartner.js';

const FIXTURE = join(__dirname, '../../../../test/fixtures/partners/paypal/STL-20261130.01.009.CSV');
const LINES = readFileSync(FIXTURE, 'utf8').split('\r\n').slice(0, -1);

/**
 * reconcilers/paypal.ts on a Settlement Report (STL v9) written from PayPal's published layout
 * (test/fixtures/partners/paypal/): a payment, a payment made twice (one of them charged back), a wrong
 * amount, a payment nobody asked for, a refund, a fee and a withdrawal, and a refund that is all the report
 * says of an intent. Its SH record declares 30 November (Pacific time), so absence is proven where nothing
 * else speaks for an intent; its SC and FF records count its rows.
 */
describe('shipped partner: paypal (Settlement Report, STL)', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'paypal',
    // The fixture's account (SH position 3): these tests rely on the report proving absence, which it does
    // only for a checked account.
    accounts: ['MERCHANT0001'],
    reconciler: paypal,
    fixture: FIXTURE,
    currency: 'USD',
    deadline: '3650d',
  });

  /** The fixture's intents; its dates are Pacific time (PST, UTC-8): 09:15:02 -0800 is 17:15:02 UTC. */
  async function intents(partner: string) {
    return {
      paid: await stuck(partner, 'order-2001', '25.00', '2026-11-30T17:15:00Z'),
      twice: await stuck(partner, 'order-2002', '40.00', '2026-11-30T17:30:00Z'),
      wrongAmount: await stuck(partner, 'order-2003', '15.00', '2026-11-30T17:39:50Z'),
      notInReport: await stuck(partner, 'order-2004', '10.00', '2026-11-30T19:00:00Z'),
      refundOnly: await stuck(partner, 'order-2005', '10.00', '2026-11-30T20:00:00Z'),
    };
  }

  /**
   * A copy of the fixture with a second section after the first: the SH record `header`, the column
   * header, order-2011's payment (a copy of order-2001's) and its SC, the file footer counting it.
   */
  function withSecondSection(name: string, header: string): string {
    return variant(name, (lines) => {
      const sc = lines.indexOf('"SC",10');
      const section = [
        header,
        lines[3]!,
        lines[4]!.replaceAll('1AB00000000000001', '1AB00000000000011').replace('order-2001', 'order-2011'),
        '"SC",1',
      ];
      const changed = [...lines.slice(0, sc + 1), ...section, ...lines.slice(sc + 1)];
      return changed.map((line) => (line === '"FF",10' ? '"FF",11' : line));
    });
  }

  /** A copy of the fixture with some lines changed, in the suite's temp dir. */
  function variant(name: string, change: (lines: string[]) => string[]): string {
    const file = join(fx.dir, name);
    writeFileSync(file, `${change([...LINES]).join('\r\n')}\r\n`);
    return file;
  }

  it('the package default export validates as written', () => {
    expect(() => validateReconciler(paypal, 'reconcilers/paypal.ts')).not.to.throw();
  });

  it('settles every intent as the report says, with coverage from its SH record; refunds and chargebacks are no executions, fees no orphans', async () => {
    const partner = partnerName('paypal');
    const ids = await intents(partner);
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rowsRead).to.equal(10);
    expect(report.rowsRejected).to.equal(0);
    expect(report.rowsByKind).to.deep.equal({ execution: 5, reversal: 3, failed: 0, ignored: 2 });
    // 2026/11/30 00:00:00 -0800 to 2026/11/30 23:59:59 -0800, as the SH record says.
    expect(report.coverage).to.deep.equal({
      from: new Date('2026-11-30T08:00:00Z'),
      to: new Date('2026-12-01T07:59:59Z'),
    });
    // The refund of order-2005 reverses no execution on record: said, nothing raised for it.
    expect(report.warnings).to.deep.equal([
      '1 reversal row reverse no execution of an intent on record (line 13): nothing was completed or flagged for it',
    ]);
    expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 1 });

    // Minor units: 2500 in USD is 25.00.
    expect(await intentRow(fx.sql, ids.paid)).to.deep.include({
      status: 'completed',
      partner_reference: '1AB00000000000001',
    });
    expect(await intentRow(fx.sql, ids.twice)).to.deep.include({
      status: 'completed',
      partner_reference: '1AB00000000000002',
    });
    expect((await intentRow(fx.sql, ids.wrongAmount)).status).to.equal('completed');
    // Inside the declared day, with nothing in the report that could be it: proven not executed.
    expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('not_executed');
    // A refund names it: PayPal executed something for it that this day's file does not show.
    expect((await intentRow(fx.sql, ids.refundOnly)).status).to.equal('unknown');

    const flagged = await discrepanciesOf(fx.sql, partner);
    expect(flagged.map((d) => [d.kind, d.intent_id, d.amount_at_risk, d.currency])).to.deep.equal([
      ['amount_mismatch', ids.wrongAmount, '5.00', 'USD'],
      ['duplicate_execution', ids.twice, '40.00', 'USD'],
      ['orphan_partner_record', null, '12.00', 'USD'],
    ]);
    expect(flagged[2].reference).to.equal('order-9999');
    expect(flagged[2].partner_reference).to.equal('1AB00000000000005');

    // The chargeback of the second payment is shown beside it on the duplicate.
    const duplicateId = (
      await fx.sql.query(`SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'duplicate_execution'`, [
        partner,
      ])
    ).rows[0].id;
    const duplicate = await getDiscrepancy(fx.sql, String(duplicateId));
    expect(duplicate?.reversals.map((r) => [r.partnerReference, r.amount, r.currency])).to.deep.equal([
      ['5CB00000000000010', '-40.00', 'USD'],
    ]);
    const refund = await fx.sql.query(
      `SELECT r.intent_id, e.partner_reference FROM partner_records r JOIN partner_records e ON e.id = r.reverses
        WHERE r.partner = $1 AND r.kind = 'reversal' AND r.reference = 'order-2001'`,
      [partner],
    );
    expect(refund.rows).to.deep.equal([{ intent_id: ids.paid, partner_reference: '1AB00000000000001' }]);

    // Re-running the same file changes nothing (invariant 7).
    const [again] = await reconcile({ pool: fx.sql, reconciler: config(partner), file: FIXTURE });
    expect(again.status).to.equal('succeeded');
    expect(again.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(again.discrepancies).to.deep.equal(noDiscrepancies());
  });

  it('reads the same report gzipped (STL-....CSV.gz), streamed, with the same outcomes', async () => {
    const partner = partnerName('paypal');
    const ids = await intents(partner);
    const file = join(fx.dir, 'STL-20261130.01.009.CSV.gz');
    writeFileSync(file, gzipSync(readFileSync(FIXTURE)));
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rowsRead).to.equal(10);
    expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 1 });
    expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('not_executed');
    expect(report.discrepancies).to.deep.include({
      amount_mismatch: 1,
      duplicate_execution: 1,
      orphan_partner_record: 1,
    });
  });

  it('amounts carry two implied decimals in every currency: 10000 in yen is 100 yen ("100,00 yen"), no mismatch', async () => {
    const partner = partnerName('paypal');
    const ids = await intents(partner);
    const yen = await unknownIntent(
      fx.ledger,
      spec(partner, 'order-2006', { amount: '100', currency: 'JPY' }),
    );
    await place(fx.sql, yen, { startedAt: new Date('2026-11-30T17:14:00Z') });
    // order-2001's payment and its refund become a 100-yen payment of order-2006 and its refund.
    const file = variant('STL-20261130.13.009.CSV', (lines) =>
      lines.map((line) =>
        line.includes('"order-2001"')
          ? line.replace('"order-2001"', '"order-2006"').replace(',2500,"USD"', ',10000,"JPY"')
          : line,
      ),
    );
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rowsRejected).to.equal(0);
    expect(await intentRow(fx.sql, yen)).to.deep.include({
      status: 'completed',
      partner_reference: '1AB00000000000001',
    });
    const mismatches = (await discrepanciesOf(fx.sql, partner)).filter((d) => d.intent_id === yen);
    expect(mismatches, "the yen payment is read as 100 yen, its intent's amount").to.deep.equal([]);
    expect((await intentRow(fx.sql, ids.paid)).status, 'order-2001 is now in no row').to.equal(
      'not_executed',
    );
  });

  it('a payment initiated the day before and completed in the period is dated by its completion, so it is read', async () => {
    const partner = partnerName('paypal');
    const ids = await intents(partner);
    // order-2001's Initiation Date moves to 23:59 the previous day; its Completion Date stays 09:15:02.
    const file = variant('STL-20261130.11.009.CSV', (lines) =>
      lines.map((line) =>
        line.includes('"1AB00000000000001","order-2001"')
          ? line.replace('2026/11/30 09:15:02 -0800', '2026/11/29 23:59:00 -0800')
          : line,
      ),
    );
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.rowsRejected).to.equal(0);
    expect(await intentRow(fx.sql, ids.paid)).to.deep.include({ status: 'completed' });
  });

  it('a file that starts with a UTF-8 byte order mark (PayPal notes one since 9.0.3) reads the same', async () => {
    const partner = partnerName('paypal');
    const ids = await intents(partner);
    const file = join(fx.dir, 'STL-20261130.10.009.CSV');
    writeFileSync(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(FIXTURE)]));
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 1 });
    expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('not_executed');
  });

  describe('a report whose layout is broken applies nothing, or proves nothing absent', () => {
    /** The run failed with `message`, and nothing of it was applied. */
    async function expectNothingApplied(
      partner: string,
      ids: Record<string, string>,
      file: string,
      message: RegExp,
    ) {
      const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(report.status).to.equal('failed');
      expect(report.error).to.match(message);
      expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      for (const id of Object.values(ids)) expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
      expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
      const stored = await fx.sql.query('SELECT count(*)::int AS n FROM partner_records WHERE partner = $1', [
        partner,
      ]);
      expect(stored.rows[0].n).to.equal(0);
      return report;
    }

    it('a section count that disagrees with its rows (a row lost): the run fails naming the file, line and record', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      // The wrong amount's row is gone; SC and FF still say 10.
      const file = variant('STL-20261130.02.009.CSV', (lines) =>
        lines.filter((line) => !line.includes('order-2003')),
      );
      const report = await expectNothingApplied(
        partner,
        ids,
        file,
        /STL-20261130\.02\.009\.CSV: line 15: the SC record counts 10 SB record\(s\) in its SH section, but 9 were read/,
      );
      expect(report.error).to.include('nothing of the file is applied');
    });

    it('a file footer that counts more rows than the file has: fails', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.03.009.CSV', (lines) =>
        lines.map((l) => (l === '"FF",10' ? '"FF",11' : l)),
      );
      await expectNothingApplied(
        partner,
        ids,
        file,
        /line 19: the FF record counts 11 SB record\(s\) in the file, but 10 were read/,
      );
    });

    it('a file cut before its footer (no FF): fails, it never proves a payment absent', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      // Cut right after the first four rows: even the counts that would disagree are gone.
      const file = variant('STL-20261130.04.009.CSV', (lines) => lines.slice(0, 8));
      await expectNothingApplied(
        partner,
        ids,
        file,
        /line 8: the file ends without its FF record: it was cut short or is partial/,
      );
    });

    it('a row before any CH record (its columns have no names): fails', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.05.009.CSV', (lines) => [
        lines[0]!,
        lines[1]!,
        lines[2]!,
        lines[4]!,
        lines[3]!,
        ...lines.slice(5),
      ]);
      await expectNothingApplied(partner, ids, file, /line 4: a SB record before any CH record/);
    });

    it('an unknown record type is a rejected row naming its line; it may be anybody`s, so nothing is proven absent', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.06.009.CSV', (lines) => [
        ...lines.slice(0, 9),
        '"SX","1AB00000000000099","order-2004"',
        ...lines.slice(9),
      ]);
      // maxRejectedRatio 0 (the shipped setting): one rejected row fails the run.
      const strict = await expectNothingApplied(partner, ids, file, /rejected/);
      expect(strict.rejected).to.deep.equal([
        {
          line: 10,
          field: 'record type (position 0)',
          reason:
            '"SX" is not a record type of this report (known: CH, SB, RH, FH, SF, RF, RC, SH, SC, FF); the record is not guessed',
        },
      ]);

      const [tolerant] = await reconcile({
        pool: fx.sql,
        reconciler: { ...config(partner, file), maxRejectedRatio: 0.2 },
        file,
      });
      expect(tolerant.status, `error: ${tolerant.error}`).to.equal('succeeded');
      expect(tolerant.rowsRejected).to.equal(1);
      expect(tolerant.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });
      expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');
    });

    it('a report without its SH record states no account: with the account checked it fails, applying nothing', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.06.009.CSV', (lines) =>
        lines.filter((line) => !line.startsWith('"SH"')),
      );
      const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(report.status).to.equal('failed');
      expect(report.error).to.match(/line \d+: a row before any SH record stating the merchant account/);
      for (const id of Object.values(ids)) expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
    });

    it('a report without its SH record declares no period: unchecked, it completes what it shows, proves nothing absent, and says so', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.07.009.CSV', (lines) =>
        lines.filter((line) => !line.startsWith('"SH"')),
      );
      // The shipped source, its account variable unset: nothing to check the rows against.
      const unchecked = { ...config(partner, file), source: { ...paypal.source, path: file } };
      const [report] = await reconcile({ pool: fx.sql, reconciler: unchecked, file, env: {} });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect(report.coverage).to.equal(null);
      expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });
      expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');
      expect(report.warnings).to.include(
        'the reconciler takes the coverage from the report (coverage: { fromReport: true }), but "STL-20261130.07.009.CSV" declares none: no intent is proven absent',
      );
    });

    it('the first file of a day split over several files (its section has no SC) declares nothing: nothing is proven absent', async () => {
      // PayPal caps a file at a million rows and numbers the rest (.01, .02, ...): the day's SH opens in
      // the first file and its SC closes it in the last. The first file alone ends with a matching FF, but
      // the rows of the second are not in it, so its SH's day is not proven whole.
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.01.009.CSV', (lines) =>
        lines.filter((line) => !/^"(SF|SC|RF|RC)"/.test(line)),
      );
      const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect(report.coverage).to.equal(null);
      expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });
      expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');
      expect(report.warnings).to.include(
        '"STL-20261130.01.009.CSV": the SH section from line 3 is not closed by its SC record (a report split over several files, or a file cut short): no intent is proven absent',
      );
    });

    it('a section left open before the next SH (its SC lost) voids the whole report, even when a later section closes', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.08.009.CSV', (lines) => {
        const sc = lines.indexOf('"SC",10');
        const again = [
          '"SH",2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,"MERCHANT0001",""',
          lines[3]!,
          lines[4]!.replaceAll('1AB00000000000001', '1AB00000000000011').replace('order-2001', 'order-2011'),
          '"SC",1',
        ];
        const changed = [...lines.slice(0, sc), ...again, ...lines.slice(sc + 1)];
        return changed.map((line) => (line === '"FF",10' ? '"FF",11' : line));
      });
      const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect(report.coverage).to.equal(null);
      expect(
        report.warnings.some((w) => w.includes('the SH section from line 3 is not closed by its SC record')),
      ).to.be.true;
      expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');
    });

    it('two sections declaring two different days share no period: nothing is proven absent, and the run says so', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = withSecondSection(
        'STL-20261130.09.009.CSV',
        '"SH",2026/12/01 00:00:00 -0800,2026/12/01 23:59:59 -0800,"MERCHANT0001",""',
      );
      const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect(report.coverage).to.equal(null);
      expect(report.warnings).to.include(
        'the 2 coverage declarations of "STL-20261130.09.009.CSV" share no period: no intent is proven absent',
      );
      expect(report.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });
      expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('unknown');
    });

    it('two sections whose periods overlap cover only what both declare', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = withSecondSection(
        'STL-20261130.12.009.CSV',
        '"SH",2026/11/30 00:00:00 -0800,2026/11/30 12:15:00 -0800,"MERCHANT0001",""',
      );
      const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      // The whole day and its first half and a quarter: the latter (08:00Z to 20:15Z).
      expect(report.coverage).to.deep.equal({
        from: new Date('2026-11-30T08:00:00Z'),
        to: new Date('2026-11-30T20:15:00Z'),
      });
      // Started 19:00Z, plus the hour of settlement lag and the 15 minutes of clock skew: still inside.
      expect((await intentRow(fx.sql, ids.notInReport)).status).to.equal('not_executed');
    });

    it('an unknown T-code is a rejected row naming the code, never a guessed kind', async () => {
      const partner = partnerName('paypal');
      const ids = await intents(partner);
      const file = variant('STL-20261130.08.009.CSV', (lines) =>
        lines.map((l) => l.replace('"T0100"', '"T9999"')),
      );
      const report = await expectNothingApplied(partner, ids, file, /rejected/);
      expect(report.rejected).to.deep.equal([
        {
          line: 11,
          field: 'Transaction Event Code',
          reason:
            'Transaction Event Code "T9999", Transaction Debit or Credit "DR" is not a known kind of row; the row\'s kind is not guessed',
        },
      ]);
    });
  });
});
