import { expect } from 'chai';
import twilio from '../../../reconcilers/twilio.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import {
  completedIntent,
  discrepanciesOf,
  intentRow,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
} from '../support.js';
import { startTwilioFake, TWILIO_FIXTURE, type TwilioFake } from './twilioFake.js';

const AUTH_TOKEN = 'twilio_test_auth_token';
const env = { TWILIO_ACCOUNT_SID: TWILIO_FIXTURE.account_sid, TWILIO_AUTH_TOKEN: AUTH_TOKEN };

/**
 * reconcilers/twilio.ts against a Twilio-like Messages list on loopback serving the fixture
 * (test/fixtures/partners/twilio/) two messages a page, so four pages linked by `next_page_uri`.
 */
describe('shipped partner: twilio (Messages list API)', () => {
  // Twilio prices a message in fractions of a cent (0.0079 USD): the ledger allows it for these partners only.
  const PARTNERS = {
    pages: 'twilio-pages',
    page2: 'twilio-page2',
    auth: 'twilio-auth',
    queued: 'twilio-queued',
    national: 'twilio-national',
    repeated: 'twilio-repeated',
    noRecipient: 'twilio-no-recipient',
    dialledRecipient: 'twilio-dialled-recipient',
    pricedLater: 'twilio-priced-later',
    pricedLaterNoAmount: 'twilio-priced-later-no-amount',
  };
  const fx = useReconcileFixture('rec_twilio', { subMinorUnitPartners: Object.values(PARTNERS) });
  let fake: TwilioFake | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  /** The shipped config, spread as a deployment would, pointed at the fake and at the fixture's day. */
  function config(partner: string, url: string): ReconcilerConfig {
    const source = twilio.source as ReconcilerApiSource;
    return {
      ...twilio,
      partner,
      deadline: '30d',
      coverage: { from: new Date('2026-11-30T09:00:00Z'), to: new Date('2026-11-30T12:00:00Z') },
      source: {
        ...source,
        baseUrl: url,
        path: `/2010-04-01/Accounts/${TWILIO_FIXTURE.account_sid}/Messages.json`,
        query: { PageSize: '2' },
        retries: 0,
      },
    };
  }

  const sms = (partner: string, to: string, amount = '0.0079') =>
    spec(partner, to, { amount, currency: 'USD', operation: 'sms' });

  async function stuck(partner: string, to: string, at: string, amount?: string): Promise<string> {
    const id = await unknownIntent(fx.ledger, sms(partner, to, amount));
    await place(fx.sql, id, { startedAt: new Date(at) });
    return id;
  }

  it('reads every page and settles each intent as the fixture says', async () => {
    fake = await startTwilioFake({ authToken: AUTH_TOKEN, pageSize: 2 });
    const partner = PARTNERS.pages;
    const ids = {
      delivered: await stuck(partner, '+15550000001', '2026-11-30T10:00:04Z'),
      twice: await stuck(partner, '+15550000002', '2026-11-30T10:05:04Z'),
      wrongPrice: await stuck(partner, '+15550000004', '2026-11-30T10:10:04Z'),
      failed: await stuck(partner, '+15550000006', '2026-11-30T10:20:04Z'),
      notPriced: await stuck(partner, '+15550000008', '2026-11-30T10:30:04Z'),
      neverSent: await stuck(partner, '+15550000009', '2026-11-30T10:40:00Z'),
    };
    // Read at 22:00: the never-sent intent's attempt is past the settlement lag (Twilio's longest queue time).
    const evening = { from: new Date('2026-11-30T09:00:00Z'), to: new Date('2026-11-30T22:00:00Z') };
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: { ...config(partner, fake.url), coverage: evening },
      env,
    });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');

    // Four pages, each asked for with the partner's own window parameters.
    expect(fake.requests.map((q) => q.get('Page'))).to.deep.equal([null, '1', '2', '3']);
    expect(fake.requests[0]!.get('DateSent>')).to.equal('2026-11-30T09:00:00Z');
    expect(fake.requests[0]!.get('DateSent<')).to.equal('2026-11-30T22:00:00Z');

    expect(report.rowsRead).to.equal(8);
    expect(report.rowsRejected).to.equal(0);
    expect(report.rowsByKind).to.deep.equal({ execution: 6, reversal: 0, failed: 1, ignored: 1 });
    expect(report.resolved).to.deep.equal({ completed: 4, notExecuted: 1 });
    const status = async (id: string) => (await intentRow(fx.sql, id)).status;
    expect(await intentRow(fx.sql, ids.delivered)).to.deep.include({
      status: 'completed',
      partner_reference: 'SM00000000000000000000000000000001',
    });
    expect(await status(ids.twice)).to.equal('completed');
    expect(await status(ids.wrongPrice)).to.equal('completed');
    expect(await status(ids.notPriced)).to.equal('completed');
    // A failed try completes nothing and proves nothing: it stays for a later listing or a person.
    expect(await status(ids.failed)).to.equal('unknown');
    // Nothing could be it, and the listing covers its attempt: never sent, safe to send.
    expect(await status(ids.neverSent)).to.equal('not_executed');

    const flagged = (await discrepanciesOf(fx.sql, partner)).map((d) => [
      d.kind,
      d.intent_id,
      d.amount_at_risk,
      d.currency,
    ]);
    expect(flagged).to.deep.equal([
      ['amount_mismatch', ids.wrongPrice, '0.00790', 'USD'],
      ['duplicate_execution', ids.twice, '0.0079', 'USD'],
      ['orphan_partner_record', null, '0.00790', 'USD'],
    ]);
    const orphan = (await discrepanciesOf(fx.sql, partner)).find((d) => d.kind === 'orphan_partner_record');
    expect(orphan.partner_reference).to.equal('SM00000000000000000000000000000005');
  });

  it('a listing that fails on page 2 fails the run and applies nothing', async () => {
    fake = await startTwilioFake({ authToken: AUTH_TOKEN, pageSize: 2, failOnPage: 1 });
    const partner = PARTNERS.page2;
    const delivered = await stuck(partner, '+15550000001', '2026-11-30T10:00:04Z');
    const neverSent = await stuck(partner, '+15550000009', '2026-11-30T10:40:00Z');
    const done = await completedIntent(fx.ledger, sms(partner, '+15550000007'), 'SM-earlier');
    const before = await snapshot(fx.sql);
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, fake.url), env });
    expect(report.status).to.equal('failed');
    expect(report.error).to.contain('HTTP 500');
    expect(report.error).to.contain('at page 2');
    expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect((await intentRow(fx.sql, delivered)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, neverSent)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, done)).status).to.equal('completed');
  });

  it("a message still in Twilio's queue when the listing is read keeps its intent from being proven absent", async () => {
    // Twilio filters DateSent on date_sent, which a message gets only once it leaves the queue, where it may
    // wait up to its ValidityPeriod (10 hours by default). At noon the listing of 09:00-12:00 does not show
    // the message created at 10:50:01 and still queued: nothing in it proves that it was never sent, and
    // proving it absent would have the consumer send it again, while Twilio sends the first one later.
    const queued = {
      ...TWILIO_FIXTURE.messages.find((m) => m.sid === 'SM00000000000000000000000000000001'),
      sid: 'SM00000000000000000000000000000010',
      to: '+15550000010',
      date_created: 'Mon, 30 Nov 2026 10:50:01 +0000',
      date_sent: null,
      date_updated: 'Mon, 30 Nov 2026 10:50:01 +0000',
      price: null,
      status: 'queued',
    };
    fake = await startTwilioFake({
      authToken: AUTH_TOKEN,
      pageSize: 2,
      extra: [queued],
      filterDateSent: true,
    });
    const partner = PARTNERS.queued;
    // The account's other messages of the morning, listed and matched: the listing is this account's.
    await stuck(partner, '+15550000001', '2026-11-30T10:00:04Z');
    await stuck(partner, '+15550000002', '2026-11-30T10:05:04Z');
    await stuck(partner, '+15550000004', '2026-11-30T10:10:04Z');
    await stuck(partner, '+15550000008', '2026-11-30T10:30:04Z');
    const inQueue = await stuck(partner, '+15550000010', '2026-11-30T10:50:00Z');
    const noon = { from: new Date('2026-11-30T09:00:00Z'), to: new Date('2026-11-30T12:00:00Z') };
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: { ...config(partner, fake.url), coverage: noon },
      env,
    });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    // The fixture's eight but its failed message, which has no date_sent either; the queued one is not listed.
    expect(report.rowsRead).to.equal(7);
    expect(report.resolved.completed).to.equal(4);
    expect((await intentRow(fx.sql, inQueue)).status).to.equal('unknown');
  });

  it('an intent whose recipient is not written in E.164 is never proven absent: Twilio lists it as +1...', async () => {
    fake = await startTwilioFake({ authToken: AUTH_TOKEN, pageSize: 2 });
    const partner = PARTNERS.national;
    // The account's morning, listed and matched: the listing is this account's.
    await stuck(partner, '+15550000001', '2026-11-30T10:00:04Z');
    await stuck(partner, '+15550000002', '2026-11-30T10:05:04Z');
    // The same recipient as a listed message, written as dialled: Twilio lists it as +15550000004, so no row
    // can match it as written, and its absence from the listing proves nothing (it was sent, billed).
    const dialled = await stuck(partner, '(555) 000-0004', '2026-11-30T10:10:04Z');
    // In E.164 and in no listed message: proven never sent.
    const neverSent = await stuck(partner, '+15550000099', '2026-11-30T10:20:00Z');
    // A lag short enough for this 3-hour listing to prove anything at all (the shipped 11 h waits out a
    // message's ValidityPeriod in the queue; this fake has no queue).
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: { ...config(partner, fake.url), settlementLag: '10m' },
      env,
    });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect((await intentRow(fx.sql, dialled)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, neverSent)).status).to.equal('not_executed');
    expect(
      report.warnings.some((w) => w.startsWith('1 stuck intents have a reference this partner never')),
    ).to.equal(true);
  });

  it('a page listed again in place of the next one fails the run: no double execution, nothing proven absent', async () => {
    // Page 2 (Page=1) is page 1's two messages again, and the listing ends there: its own messages and the
    // rest are never shown. Read as new, page 1's messages counted twice and the unlisted intents looked
    // never sent, although Twilio sent them.
    fake = await startTwilioFake({ authToken: AUTH_TOKEN, pageSize: 2, repeatPreviousOn: 1 });
    const partner = PARTNERS.repeated;
    const first = await stuck(partner, '+15550000001', '2026-11-30T10:00:04Z');
    const unlisted = await stuck(partner, '+15550000004', '2026-11-30T10:10:04Z');
    const before = await snapshot(fx.sql);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: { ...config(partner, fake.url), settlementLag: '10m' },
      env,
    });
    expect(report.status).to.equal('failed');
    expect(report.error).to.contain('record 3 at page 2 is record 1 again');
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect((await intentRow(fx.sql, first)).status).to.equal('unknown');
    expect((await intentRow(fx.sql, unlisted)).status).to.equal('unknown');
    expect(await discrepanciesOf(fx.sql, partner)).to.deep.equal([]);
  });

  for (const [name, partner, to] of [
    ['without a recipient', PARTNERS.noRecipient, null],
    ['with a recipient Twilio never writes (not E.164)', PARTNERS.dialledRecipient, '5550000099'],
  ] as const) {
    it(`a sent message listed ${name} could be any intent's: the run proves no intent absent`, async () => {
      // The execution of the intent below, listed so that nothing matches it (Twilio writes \`to\` in
      // E.164 on every message it sends): proving that intent never sent would send it a second time.
      const anonymous = {
        ...TWILIO_FIXTURE.messages.find((m) => m.sid === 'SM00000000000000000000000000000001'),
        sid: 'SM00000000000000000000000000000099',
        to,
        date_sent: 'Mon, 30 Nov 2026 10:20:05 +0000',
      };
      fake = await startTwilioFake({ authToken: AUTH_TOKEN, pageSize: 2, extra: [anonymous] });
      const delivered = await stuck(partner, '+15550000001', '2026-11-30T10:00:04Z');
      const itsIntent = await stuck(partner, '+15550000099', '2026-11-30T10:20:00Z');
      const [report] = await reconcile({
        pool: fx.sql,
        reconciler: { ...config(partner, fake.url), settlementLag: '10m' },
        env,
      });
      expect(report.status, `error: ${report.error}`).to.equal('succeeded');
      expect(report.rowsRejected).to.equal(0);
      expect((await intentRow(fx.sql, delivered)).status).to.equal('completed');
      expect((await intentRow(fx.sql, itsIntent)).status).to.equal('unknown');
      expect(report.resolved.notExecuted).to.equal(0);
      expect(report.warnings).to.include(
        '1 executions carry no reference or one outside match.shape ^(whatsapp:)?\\+[1-9][0-9]{1,14}$ and name ' +
          "no intent we know: each could be any stuck intent's execution, so this run proves no intent absent",
      );
      // And a person is shown the message nobody's intent matched.
      const orphans = (await discrepanciesOf(fx.sql, partner)).filter(
        (d) => d.kind === 'orphan_partner_record',
      );
      expect(orphans.map((d) => d.partner_reference)).to.include('SM00000000000000000000000000000099');
    });
  }

  /** Runs of the shipped config against a fake that lists SM...08 at `price` (null: not priced yet). */
  async function runPriced(partner: string, price: string | null): Promise<void> {
    fake = await startTwilioFake({
      authToken: AUTH_TOKEN,
      pageSize: 2,
      patch: { SM00000000000000000000000000000008: { price } },
    });
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, fake.url), env });
    await fake.close();
    fake = undefined;
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
  }

  const mismatchesOf = async (partner: string, intent: string) =>
    (await discrepanciesOf(fx.sql, partner)).filter(
      (d) => d.intent_id === intent && d.kind === 'amount_mismatch',
    );

  it('a message priced after a first run completed it: its own price raises nothing, another one a mismatch once', async () => {
    // SM...08 is listed unpriced (Twilio prices a message after sending it). The next runs of an overlapping
    // window list it priced: at the intent's own 0.0079 first, then at 0.0158.
    const partner = PARTNERS.pricedLater;
    const notPriced = await stuck(partner, '+15550000008', '2026-11-30T10:30:04Z');
    await runPriced(partner, null);
    expect((await intentRow(fx.sql, notPriced)).status).to.equal('completed');
    expect(await mismatchesOf(partner, notPriced)).to.deep.equal([]);
    await runPriced(partner, '-0.00790');
    expect(await mismatchesOf(partner, notPriced)).to.deep.equal([]);
    await runPriced(partner, '-0.01580');
    await runPriced(partner, '-0.01580');
    const raised = await mismatchesOf(partner, notPriced);
    expect(raised.map((d) => d.amount_at_risk)).to.deep.equal(['0.00790']);
    expect(raised[0].summary).to.contain('an unknown amount before, 0.01580 USD now');
  });

  it('an intent without an amount compares nothing, neither when its message is priced later', async () => {
    const partner = PARTNERS.pricedLaterNoAmount;
    const id = await unknownIntent(
      fx.ledger,
      spec(partner, '+15550000008', { amount: undefined, currency: undefined, operation: 'sms' }),
    );
    await place(fx.sql, id, { startedAt: new Date('2026-11-30T10:30:04Z') });
    for (const price of [null, '-0.00790', '-0.01580']) await runPriced(partner, price);
    expect((await intentRow(fx.sql, id)).status).to.equal('completed');
    expect(await mismatchesOf(partner, id)).to.deep.equal([]);
  });

  it('wrong credentials: the run fails naming the two variables, never the token', async () => {
    fake = await startTwilioFake({ authToken: 'another token', pageSize: 2 });
    const partner = PARTNERS.auth;
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, fake.url), env });
    expect(report.status).to.equal('failed');
    expect(report.error).to.contain('TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN');
    expect(report.error).not.to.contain(AUTH_TOKEN);
    const [missing] = await reconcile({
      pool: fx.sql,
      reconciler: config(partner, fake.url),
      env: { TWILIO_ACCOUNT_SID: TWILIO_FIXTURE.account_sid },
    });
    expect(missing.error).to.contain('TWILIO_AUTH_TOKEN');
  });
});
