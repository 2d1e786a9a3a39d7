import { expect } from 'chai';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import {
  csvReconciler,
  dbNow,
  fakePartnerReconciler,
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
 * A report's period is in the partner's clock: it lists what the partner dated inside it. An attempt's start
 * is in ours, and `clockSkew` says how far the two may be apart. An intent started just after the period's
 * start by our clock may have been executed and dated just before it by a partner clock a few minutes behind
 * (it is then in the previous report), and one started a settlement lag before the period's end may be
 * dated just after it by a clock ahead (it is then in the next report). Neither's absence from this report
 * proves anything: proven `not_executed`, it would be retried, and charged twice.
 */
describe('reconcile: coverage and the clock skew between the partner and us', () => {
  const fx = useReconcileFixture('rec_skew');
  let base: Date;
  const at = (m: number) => minutes(base, m);

  before(async () => {
    base = minutes(await dbNow(fx.sql), -10 * 60);
  });

  async function run(config: ReconcilerConfig): Promise<ReconciliationResult> {
    const [report] = await reconcile({ pool: fx.sql, reconciler: config });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    return report;
  }

  async function stuck(partner: string, key: string, m: number): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, key));
    await place(fx.sql, id, { startedAt: at(m) });
    return id;
  }

  // Period [0, 480] minutes, settlement lag 1h, clock skew 10m: the partner's clock may be up to 10 minutes
  // from ours either way.
  const timings = { settlementLag: '1h', clockSkew: '10m' } as const;

  it('a file: intents within the skew of its period`s ends stay unproven; those well inside are proven', async () => {
    const partner = partnerName('skew-csv');
    // Started 3 minutes into the period by our clock; executed at once and dated 2 minutes before it by a
    // partner clock 5 minutes behind: in the previous period's file.
    const early = await stuck(partner, 'early', 3);
    // Started 63 minutes before the end, executed 59 minutes later (within the lag) and dated 1 minute after
    // the end by a partner clock 5 minutes ahead: in the next period's file.
    const late = await stuck(partner, 'late', 480 - 63);
    const found = await stuck(partner, 'found', 100);
    const absent = await stuck(partner, 'absent', 200);
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'found', nsu: 'S-1', amount: '10.00', executedAt: at(101) },
    ]);
    const report = await run(
      csvReconciler(partner, file, { ...timings, coverage: { from: at(0), to: at(480) } }),
    );
    expect((await intentRow(fx.sql, found)).status).to.equal('completed');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, early)).status, 'started 3m into the period').to.equal('unknown');
    expect((await intentRow(fx.sql, late)).status, 'started lag + 3m before its end').to.equal('unknown');
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 1 });
  });

  it('a period shorter than twice the skew plus the lag proves nothing, and the run says why', async () => {
    const partner = partnerName('skew-short');
    // [0, 79] minutes with a lag of 1 h and a skew of 10 min: a start would need to be at least 10 minutes in
    // and 70 before the end, which no start is. The intent at 10 minutes is executed nowhere, stays unproven.
    const absent = await stuck(partner, 'absent', 10);
    const found = await stuck(partner, 'found', 20);
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'found', nsu: 'S-1', amount: '10.00', executedAt: at(21) },
    ]);
    const report = await run(
      csvReconciler(partner, file, { ...timings, coverage: { from: at(0), to: at(79) } }),
    );
    expect((await intentRow(fx.sql, absent)).status).to.equal('unknown');
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 0 });
    expect(report.warnings).to.include(
      "the report covers 79 min, less than twice clockSkew plus settlementLag (80 min): no intent's start " +
        'can lie far enough inside it, and this run proves no intent absent',
    );
    void found;
  });

  describe('an API listing', () => {
    let fake: FakePartner;
    const TOKEN = 'tok_skew_test';
    beforeEach(async () => {
      fake = await startFakePartner({ token: TOKEN });
    });
    afterEach(() => fake.close());

    it('a listing asked for a fixed window: an intent started 3 minutes into it, dated before it, is not proven absent', async () => {
      const partner = partnerName('skew-api');
      const early = await stuck(partner, `${partner}-early`, 3);
      const found = await stuck(partner, `${partner}-found`, 100);
      const absent = await stuck(partner, `${partner}-absent`, 200);
      fake.seed([
        // The partner's clock is 5 minutes behind: dated before the window, so not in the listing.
        {
          id: 'ch_early',
          reference: `${partner}-early`,
          amount: '10.00',
          currency: 'BRL',
          executedAt: at(-2),
        },
        {
          id: 'ch_found',
          reference: `${partner}-found`,
          amount: '10.00',
          currency: 'BRL',
          executedAt: at(101),
        },
      ]);
      const config = fakePartnerReconciler(
        partner,
        { baseUrl: fake.url, auth: { env: 'ACME_TOKEN' } },
        { ...timings, coverage: { from: at(0), to: at(480) } },
      );
      const [report] = await reconcile({ pool: fx.sql, reconciler: config, env: { ACME_TOKEN: TOKEN } });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect((await intentRow(fx.sql, found)).status).to.equal('completed');
      expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
      expect((await intentRow(fx.sql, early)).status, 'executed, dated before the window').to.equal(
        'unknown',
      );
    });
  });
});
