import { expect } from 'chai';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import {
  completedIntent,
  dbNow,
  discrepanciesOf,
  fakePartnerReconciler,
  intentRow,
  minutes,
  noDiscrepancies,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

const TOKEN = 'tok_reconcile_test';
/** The fake partner's own answer for a reference it never charged: 404 `{ "error": "not_found" }`. */
const FAKE_NOT_FOUND = { field: 'error', equals: 'not_found' };
const env = { ACME_TOKEN: TOKEN };

/** The fake partner's listing with this suite's token and two items per page (so paging is exercised). */
function apiReconciler(
  partner: string,
  source: Partial<ReconcilerApiSource> & { baseUrl: string },
): ReconcilerConfig {
  return fakePartnerReconciler(partner, {
    auth: { env: 'ACME_TOKEN' },
    pagination: { type: 'cursor', limit: 2 },
    ...source,
  });
}

describe('reconcile: API sources against the loopback fake partner', () => {
  const fx = useReconcileFixture('rec_api');
  let fake: FakePartner;
  let now: Date;
  beforeEach(async () => {
    fake = await startFakePartner({ token: TOKEN });
    now = await dbNow(fx.sql);
  });
  afterEach(() => fake.close());

  it('listing: reads every cursor page of the default window and decides like a CSV report', async () => {
    const partner = partnerName('api');
    const ids: Record<string, string> = {};
    for (const name of ['found', 'absent']) {
      ids[name] = await unknownIntent(fx.ledger, spec(partner, `${partner}-${name}`));
      await place(fx.sql, ids[name], { startedAt: minutes(now, -180) });
    }
    ids.recent = await unknownIntent(fx.ledger, spec(partner, `${partner}-recent`));
    await place(fx.sql, ids.recent, { startedAt: minutes(now, -30) });
    ids.settled = await completedIntent(fx.ledger, spec(partner, `${partner}-settled`), 'ch_settled');
    await place(fx.sql, ids.settled, { startedAt: minutes(now, -240) });
    fake.seed([
      {
        id: 'ch_found',
        reference: `${partner}-found`,
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(now, -179),
      },
      {
        id: 'ch_stranger',
        reference: 'stranger',
        amount: '7.50',
        currency: 'BRL',
        executedAt: minutes(now, -100),
      },
      { id: 'ch_other', reference: 'other', amount: '1.00', currency: 'BRL', executedAt: minutes(now, -90) },
      // Before the window (deadline + lag + stuckAfter + clockSkew back): never asked for, so not an orphan.
      {
        id: 'ch_ancient',
        reference: 'ancient',
        amount: '1.00',
        currency: 'BRL',
        executedAt: minutes(now, -5 * 24 * 60),
      },
    ]);

    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: apiReconciler(partner, { baseUrl: fake.url }),
      env,
    });
    expect(run).to.deep.include({
      status: 'succeeded',
      source: `${fake.url}/v1/settlements`,
      rowsRead: 3,
      rowsRejected: 0,
      matched: 1,
      resolved: { completed: 1, notExecuted: 1 },
      discrepancies: { ...noDiscrepancies(), missing_at_partner: 1, orphan_partner_record: 2 },
      error: null,
    });
    expect(fake.requests).to.equal(2); // two pages of two
    // deadline 3d + settlementLag 1h + stuckAfter 15m + clockSkew 15m (the default).
    const windowMs = (3 * 24 * 60 + 60 + 15 + 15) * 60_000;
    expect(run.coverage!.to.getTime() - run.coverage!.from.getTime()).to.equal(windowMs);
    expect(run.checksum).to.match(/^[0-9a-f]{64}$/);
    expect(await intentRow(fx.sql, ids.found)).to.deep.include({
      status: 'completed',
      partner_reference: 'ch_found',
    });
    expect((await intentRow(fx.sql, ids.absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, ids.recent)).status).to.equal('unknown');
    const found = (await discrepanciesOf(fx.sql, partner)).map((d) => [d.kind, d.dedupe_key]);
    expect(found).to.deep.equal([
      ['missing_at_partner', `missing_at_partner:${ids.settled}`],
      ['orphan_partner_record', `orphan_partner_record:${partner}:ch_other|other#1`],
      ['orphan_partner_record', `orphan_partner_record:${partner}:ch_stranger|stranger#1`],
    ]);

    // The same listing again: same canonical rows, same checksum, nothing new.
    const before = await snapshot(fx.sql);
    const [again] = await reconcile({
      pool: fx.sql,
      reconciler: apiReconciler(partner, { baseUrl: fake.url }),
      env,
    });
    expect(again).to.deep.include({
      status: 'succeeded',
      checksum: run.checksum,
      resolved: { completed: 0, notExecuted: 0 },
      discrepancies: noDiscrepancies(),
    });
    expect(await snapshot(fx.sql)).to.deep.equal(before);
  });

  it('listing failures are failed runs with the reader message: missing token, garbage', async () => {
    const partner = partnerName('api-fail');
    const intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-x`));
    await place(fx.sql, intentId, { startedAt: minutes(now, -180) });
    const [noToken] = await reconcile({
      pool: fx.sql,
      reconciler: apiReconciler(partner, { baseUrl: fake.url }),
      env: {},
    });
    expect(noToken).to.deep.include({
      status: 'failed',
      error: `partner ${partner}: the environment variable ACME_TOKEN that should hold the API token is not set: set it before reading this partner`,
    });
    fake.failNext(1, { kind: 'garbage', body: '<html>maintenance</html>' });
    const [garbage] = await reconcile({
      pool: fx.sql,
      reconciler: apiReconciler(partner, { baseUrl: fake.url }),
      env,
    });
    expect(garbage.status).to.equal('failed');
    expect(garbage.error).to.match(/^partner api-fail-\d+: answered something that is not JSON at page 1/);
    expect(garbage.error).to.not.contain(TOKEN);
    expect((await intentRow(fx.sql, intentId)).status).to.equal('unknown');
    const runs = await fx.sql.query(
      'SELECT status, error FROM reconciliation_runs WHERE partner = $1 ORDER BY id',
      [partner],
    );
    expect(runs.rows).to.deep.equal([
      { status: 'failed', error: noToken.error },
      { status: 'failed', error: garbage.error },
    ]);
  });

  it("lookup mode: a 404 that is not the partner's answer for an unknown reference (a wrong path) proves nothing", async () => {
    const partner = partnerName('lookup-path');
    const id = await unknownIntent(fx.ledger, spec(partner, `${partner}-charged`));
    await place(fx.sql, id, { startedAt: minutes(now, -180) });
    fake.seed([
      { reference: `${partner}-charged`, amount: '10.00', currency: 'BRL', executedAt: minutes(now, -179) },
    ]);
    // A typo in the path: the fake answers 404 { "error": "no such endpoint" }, as a gateway or a router would.
    for (const notFound of [FAKE_NOT_FOUND, undefined]) {
      const source = { baseUrl: fake.url, path: '', lookup: { path: '/v1/reference/{reference}', notFound } };
      const [run] = await reconcile({ pool: fx.sql, reconciler: apiReconciler(partner, source), env });
      expect(run.status, JSON.stringify(notFound)).to.equal('failed');
      expect(run.error).to.include('answered HTTP 404');
      expect(run.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      expect((await intentRow(fx.sql, id)).status, 'the charged intent must stay stuck').to.equal('unknown');
    }
  });

  it('lookup mode: asks about each stuck reference; a 404 under its own coverage proves not_executed', async () => {
    const partner = partnerName('lookup');
    const ids: Record<string, string> = {};
    for (const name of ['found', 'twice', 'absent']) {
      ids[name] = await unknownIntent(fx.ledger, spec(partner, `${partner}-${name}`));
      await place(fx.sql, ids[name], { startedAt: minutes(now, -180) });
    }
    ids.recent = await unknownIntent(fx.ledger, spec(partner, `${partner}-recent`));
    await place(fx.sql, ids.recent, { startedAt: minutes(now, -30) });
    // Completed but unknown to the partner: lookup mode does not check settled intents.
    ids.settled = await completedIntent(fx.ledger, spec(partner, `${partner}-settled`), 'ch_settled');
    await place(fx.sql, ids.settled, { startedAt: minutes(now, -240) });
    fake.seed([
      {
        id: 'ch_found',
        reference: `${partner}-found`,
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(now, -179),
      },
      {
        id: 'ch_t1',
        reference: `${partner}-twice`,
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(now, -178),
      },
      {
        id: 'ch_t2',
        reference: `${partner}-twice`,
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(now, -170),
      },
      {
        id: 'ch_stranger',
        reference: 'stranger',
        amount: '7.50',
        currency: 'BRL',
        executedAt: minutes(now, -100),
      },
    ]);
    const source = {
      baseUrl: fake.url,
      path: '',
      lookup: { path: '/v1/references/{reference}', notFound: FAKE_NOT_FOUND },
    };
    const [run] = await reconcile({ pool: fx.sql, reconciler: apiReconciler(partner, source), env });
    expect(run).to.deep.include({
      status: 'succeeded',
      source: `${fake.url}/v1/references/{reference}`,
      rowsRead: 3,
      matched: 3,
      resolved: { completed: 2, notExecuted: 1 },
      discrepancies: { ...noDiscrepancies(), duplicate_execution: 1 },
      coverage: null,
    });
    expect(fake.requests).to.equal(4); // found, twice, absent, recent
    expect(await intentRow(fx.sql, ids.found)).to.deep.include({
      status: 'completed',
      partner_reference: 'ch_found',
    });
    expect(await intentRow(fx.sql, ids.twice)).to.deep.include({
      status: 'completed',
      partner_reference: 'ch_t1',
    });
    expect((await intentRow(fx.sql, ids.absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, ids.recent)).status).to.equal('unknown');
    expect((await discrepanciesOf(fx.sql, partner)).map((d) => [d.kind, d.intent_id])).to.deep.equal([
      ['duplicate_execution', ids.twice],
    ]);

    // The explicit mode works the same, and a re-run finds only the recent one to ask about.
    const [again] = await reconcile({
      pool: fx.sql,
      reconciler: apiReconciler(partner, { ...source, path: '/v1/settlements', mode: 'lookup' }),
      env,
    });
    expect(again).to.deep.include({
      status: 'succeeded',
      rowsRead: 0,
      resolved: { completed: 0, notExecuted: 0 },
    });
    expect(fake.requests).to.equal(5);
  });

  it('lookup mode with match.shape: an answer of "no such reference" about one written in another form proves nothing', async () => {
    const partner = partnerName('lookup-shape');
    const inShape = await unknownIntent(fx.ledger, spec(partner, 'ORD-1001'));
    const written = await unknownIntent(fx.ledger, spec(partner, 'ord 1002'));
    for (const id of [inShape, written]) await place(fx.sql, id, { startedAt: minutes(now, -180) });
    const source = {
      baseUrl: fake.url,
      path: '',
      lookup: { path: '/v1/references/{reference}', notFound: FAKE_NOT_FOUND },
    };
    const reconciler = {
      ...apiReconciler(partner, source),
      match: { by: 'reference', shape: '^ORD-[0-9]+$' },
    } as const;
    const [run] = await reconcile({ pool: fx.sql, reconciler, env });
    expect(run.status, String(run.error)).to.equal('succeeded');
    expect((await intentRow(fx.sql, inShape)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, written)).status, 'asked as written: the answer says nothing').to.equal(
      'unknown',
    );
  });

  it('lookup mode pairs answers on the reference asked, and concludes absence only from an empty answer', async () => {
    const partner = partnerName('lookup-safe');
    const ids: Record<string, string> = {};
    for (const name of ['silent', 'absent']) {
      ids[name] = await unknownIntent(fx.ledger, spec(partner, `${partner}-${name}`));
      await place(fx.sql, ids[name], { startedAt: minutes(now, -180) });
    }
    fake.seed([
      {
        id: 'ch_silent',
        reference: `${partner}-silent`,
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(now, -179),
      },
    ]);
    const fields = {
      partnerReference: 'id',
      amount: 'amount',
      currency: 'currency',
      executedAt: 'executed_at',
    };
    // The answers do not echo the reference (no reference field), and the rule for listings says amount:
    // the lookup still pairs each answer with the intent it asked about.
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: {
        ...apiReconciler(partner, {
          baseUrl: fake.url,
          path: '',
          lookup: { path: '/v1/references/{reference}', notFound: FAKE_NOT_FOUND },
          fields,
        }),
        match: { by: 'amount' },
      },
      env,
    });
    expect(run).to.deep.include({
      status: 'succeeded',
      rowsRead: 1,
      matched: 1,
      resolved: { completed: 1, notExecuted: 1 },
    });
    expect(await intentRow(fx.sql, ids.silent)).to.deep.include({
      status: 'completed',
      partner_reference: 'ch_silent',
    });
    expect((await intentRow(fx.sql, ids.absent)).status).to.equal('not_executed');

    // An answer whose only item cannot be read is not an empty answer: nothing is concluded from it.
    const other = partnerName('lookup-unreadable');
    const stuck = await unknownIntent(fx.ledger, spec(other, `${other}-x`));
    await place(fx.sql, stuck, { startedAt: minutes(now, -180) });
    fake.seed([
      {
        id: 'ch_x',
        reference: `${other}-x`,
        amount: '10.00',
        currency: 'BRL',
        executedAt: minutes(now, -179),
      },
    ]);
    const [unreadable] = await reconcile({
      pool: fx.sql,
      reconciler: {
        ...apiReconciler(other, {
          baseUrl: fake.url,
          path: '',
          lookup: { path: '/v1/references/{reference}', notFound: FAKE_NOT_FOUND },
          fields: { ...fields, executedAt: 'settled_at' },
        }),
        maxRejectedRatio: 1,
      },
      env,
    });
    expect(unreadable).to.deep.include({ status: 'succeeded', rowsRead: 1, rowsRejected: 1, matched: 0 });
    expect(unreadable.rejected).to.deep.equal([
      { line: 1, field: 'settled_at', reason: `looking up "${other}-x": execution time is missing` },
    ]);
    expect(unreadable.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect((await intentRow(fx.sql, stuck)).status).to.equal('unknown');
  });
});
