import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { capturingLogger } from '../support/testLedger.js';
import {
  completedIntent,
  csvReconciler,
  dbNow,
  discrepanciesOf,
  fakePartnerReconciler,
  intentRow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

/**
 * A rejected row is the partner saying it executed something we could not read in full. Its absence from the
 * accepted rows is therefore never proof that the intent it names was not executed: settling that intent
 * `not_executed` would charge it a second time. Each case has, besides the intents it is about, an intent
 * that is absent for real, to show what absence still proves.
 *
 * Reports declare they cover [base, base + 8h] (their first and last accepted rows fall on those ends); settlementLag is 1h; every intent
 * here started at base + 1h or later, inside the coverage, and was created over 3 days ago (past the
 * deadline), so an intent that cannot be settled is flagged `unresolved`.
 */
describe('reconcile: rejected rows are evidence, never absence', () => {
  const fx = useReconcileFixture('rec_rejected');
  let base: Date;
  const at = (m: number) => minutes(base, m);
  const HEADER = 'reference,nsu,amount,currency,executed_at';
  const row = (reference: string, nsu: string, amount: string, m: number, currency = 'BRL') =>
    [reference, nsu, amount, currency, at(m).toISOString()].join(',');

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  /** An unknown intent started `m` minutes after base and created four days ago. */
  async function stuck(partner: string, reference: string, m = 60): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, reference));
    await place(fx.sql, id, { startedAt: at(m), createdAt: minutes(base, -4 * 24 * 60) });
    return id;
  }

  async function completed(partner: string, reference: string, m = 90): Promise<string> {
    const id = await completedIntent(fx.ledger, spec(partner, reference), `NSU-${reference}`);
    await place(fx.sql, id, { startedAt: at(m) });
    return id;
  }

  function writeReport(name: string, lines: string[]): string {
    const path = join(fx.dir, name);
    writeFileSync(path, `${[HEADER, ...lines].join('\n')}\n`);
    return path;
  }

  async function run(
    config: ReconcilerConfig,
    options: { log?: Parameters<typeof capturingLogger>[0]; env?: NodeJS.ProcessEnv } = {},
  ): Promise<ReconciliationResult> {
    const reports = await reconcile({
      pool: fx.sql,
      // CSV reports declare their period here; API listings declare the window they ask for.
      reconciler:
        config.source.type === 'csv' ? { coverage: { from: base, to: at(480) }, ...config } : config,
      logger: options.log ? capturingLogger(options.log) : undefined,
      env: options.env,
    });
    expect(reports).to.have.length(1);
    expect(reports[0].status, `error: ${reports[0].error}`).to.equal('succeeded');
    return reports[0];
  }

  async function kindsOf(partner: string, intentId: string): Promise<string[]> {
    return (await discrepanciesOf(fx.sql, partner))
      .filter((d) => d.intent_id === intentId)
      .map((d) => d.kind);
  }

  it('a rejected row naming a stuck intent keeps it unknown (unresolved past the deadline); other absences still prove', async () => {
    const partner = partnerName('rejected-identified');
    const shielded = await stuck(partner, 'bad-amount');
    const badCurrency = await stuck(partner, 'bad-currency');
    const absent = await stuck(partner, 'absent');
    const found = await stuck(partner, 'found');
    const file = writeReport('identified.csv', [
      row('anchor', 'NSU-A', '1.00', 0),
      row('found', 'NSU-FOUND', '10.00', 61),
      row('bad-amount', 'NSU-BAD-1', '10.0.0', 62),
      row('bad-currency', 'NSU-BAD-2', '10.00', 63, 'R$'),
      row('anchor-last', 'NSU-Z', '1.00', 480),
    ]);
    const report = await run(csvReconciler(partner, file, { maxRejectedRatio: 0.5 }));

    expect(report.rejected.map((r) => [r.line, r.field])).to.deep.equal([
      [4, 'amount'],
      [5, 'currency'],
    ]);
    // The JSON contract of a rejection stays { line, field, reason }.
    expect(Object.keys(report.rejected[0]).sort()).to.deep.equal(['field', 'line', 'reason']);
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    for (const id of [shielded, badCurrency]) {
      expect(await intentRow(fx.sql, id)).to.deep.include({ status: 'unknown', resolution: null });
      expect(await kindsOf(partner, id)).to.deep.equal(['unresolved']);
    }
    // The next delivery of a shielded intent does not call the partner.
    let calls = 0;
    const again = await fx.ledger
      .run(spec(partner, 'bad-amount'), async () => {
        calls += 1;
        return { partnerReference: 'NSU-AGAIN' };
      })
      .then(
        () => 'ran',
        (error: Error) => error.name,
      );
    expect({ calls, again }).to.deep.equal({ calls: 0, again: 'IntentOutcomeUnknownError' });
  });

  it('a completed intent whose row is rejected is not missing_at_partner; one absent for real is', async () => {
    const partner = partnerName('rejected-completed');
    const rejectedRow = await completed(partner, 'paid-bad-row');
    const missing = await completed(partner, 'paid-missing');
    // A row of ours too: a report none of whose rows are ours proves nothing absent (wrong file?).
    const shown = await completed(partner, 'paid-shown');
    const file = writeReport('completed.csv', [
      row('anchor', 'NSU-A', '1.00', 0),
      row('paid-shown', 'NSU-paid-shown', '10.00', 90),
      row('paid-bad-row', 'NSU-paid-bad-row', 'ten', 91),
      row('anchor-last', 'NSU-Z', '1.00', 480),
    ]);
    await run(csvReconciler(partner, file, { maxRejectedRatio: 0.5 }));
    expect(await kindsOf(partner, rejectedRow)).to.deep.equal([]);
    expect(await kindsOf(partner, missing)).to.deep.equal(['missing_at_partner']);
    expect(await kindsOf(partner, shown)).to.deep.equal([]);
  });

  it('a rejected row of the wrong width may be anyone: the run proves no intent absent, and says so', async () => {
    const partner = partnerName('rejected-unreadable');
    const absent = await stuck(partner, 'absent');
    const found = await stuck(partner, 'found');
    const missing = await completed(partner, 'paid-missing');
    const file = writeReport('unreadable.csv', [
      row('anchor', 'NSU-A', '1.00', 0),
      row('found', 'NSU-FOUND', '10.00', 61),
      'absent,NSU-SHIFTED,10,00,BRL,2025-01-01T00:00:00Z',
      row('anchor-last', 'NSU-Z', '1.00', 480),
    ]);
    const log: { level: string; object: object; message: string }[] = [];
    const report = await run(csvReconciler(partner, file, { maxRejectedRatio: 0.5 }), { log });

    expect(report.rejected.map((r) => [r.line, r.field])).to.deep.equal([[4, '*']]);
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    expect(await intentRow(fx.sql, absent)).to.deep.include({ status: 'unknown', resolution: null });
    expect(await kindsOf(partner, absent)).to.deep.equal(['unresolved']);
    expect(await kindsOf(partner, missing)).to.deep.equal([]);
    const warning = log.find((entry) => entry.message.includes('proves no intent absent'));
    expect(warning?.level).to.equal('warn');
    expect(warning?.object).to.include({ rowsRejected: 1, rowsUnidentified: 1 });
  });

  it('a rejected row without any identifier can match nothing, so it shields nothing', async () => {
    const partner = partnerName('rejected-anonymous');
    const absent = await stuck(partner, 'absent');
    // A row of ours too: a report none of whose rows are ours proves nothing absent (wrong file?).
    const found = await stuck(partner, 'found');
    const file = writeReport('anonymous.csv', [
      row('anchor', 'NSU-A', '1.00', 0),
      row('found', 'NSU-FOUND', '10.00', 60),
      row('', '', '10.00', 61),
      row('anchor-last', 'NSU-Z', '1.00', 480),
    ]);
    const report = await run(csvReconciler(partner, file, { maxRejectedRatio: 0.5 }));
    expect(report.rejected.map((r) => r.reason)).to.deep.equal(['no reference and no partner reference']);
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
  });

  it('matching by amount and time, any rejected row may be any intent: nothing is proven absent', async () => {
    const partner = partnerName('rejected-by-amount');
    const absent = await stuck(partner, 'absent');
    const file = writeReport('by-amount.csv', [
      row('', 'NSU-A', '1.00', 0),
      row('', 'NSU-BAD', '10.00', 61, 'R$'),
      row('', 'NSU-Z', '1.00', 480),
    ]);
    await run(
      csvReconciler(partner, file, {
        maxRejectedRatio: 0.5,
        match: { by: 'amount', amountTolerance: '0.00', timeWindow: '10m' },
      }),
    );
    expect(await intentRow(fx.sql, absent)).to.deep.include({ status: 'unknown', resolution: null });
  });

  it('a dry run decides the same and changes nothing', async () => {
    const partner = partnerName('rejected-dry');
    const shielded = await stuck(partner, 'bad-amount');
    const absent = await stuck(partner, 'absent');
    const found = await stuck(partner, 'found');
    const file = writeReport('dry.csv', [
      row('anchor', 'NSU-A', '1.00', 0),
      row('found', 'NSU-FOUND', '10.00', 61),
      row('bad-amount', 'NSU-BAD', '1e3', 62),
      row('anchor-last', 'NSU-Z', '1.00', 480),
    ]);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, {
        maxRejectedRatio: 0.5,
        coverage: { from: base, to: at(480) },
      }),
      dryRun: true,
    });
    expect(report.status).to.equal('dry_run');
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
    expect(report.discrepancies.unresolved).to.equal(1);
    for (const id of [shielded, absent, found])
      expect((await intentRow(fx.sql, id)).status).to.equal('unknown');
  });

  describe('API listing', () => {
    const TOKEN = 'tok_rejected_rows';
    let fake: FakePartner;
    before(async () => {
      fake = await startFakePartner({ token: TOKEN });
    });
    after(() => fake.close());

    it('an item with a readable reference but a bad amount shields its intent', async () => {
      const partner = partnerName('rejected-api');
      const now = await dbNow(fx.sql);
      const ids: Record<string, string> = {};
      for (const name of ['bad', 'absent', 'found']) {
        ids[name] = await unknownIntent(fx.ledger, spec(partner, `${partner}-${name}`));
        await place(fx.sql, ids[name], { startedAt: minutes(now, -180) });
      }
      fake.seed([
        { reference: `${partner}-bad`, amount: 'ten', currency: 'BRL', executedAt: minutes(now, -179) },
        { reference: 'someone-else', amount: '1.00', currency: 'BRL', executedAt: minutes(now, -170) },
        // A row of ours too: a listing none of whose rows are ours proves nothing absent (wrong partner?).
        { reference: `${partner}-found`, amount: '10.00', currency: 'BRL', executedAt: minutes(now, -178) },
      ]);
      const report = await run(
        fakePartnerReconciler(
          partner,
          { baseUrl: fake.url, auth: { env: 'REJECTED_TOKEN' } },
          { maxRejectedRatio: 0.5 },
        ),
        { env: { REJECTED_TOKEN: TOKEN } },
      );
      expect(report.rejected.map((r) => r.field)).to.deep.equal(['amount']);
      expect((await intentRow(fx.sql, ids.bad)).status).to.equal('unknown');
      expect((await intentRow(fx.sql, ids.absent)).status).to.equal('not_executed');
      expect((await intentRow(fx.sql, ids.found)).status).to.equal('completed');
    });
  });
});
