/**
 * Partner faults, from a real loopback HTTP partner (src/partnerFake) called with axios through the ledger's
 * real `run()`: each fault lands in the state docs/DESIGN.md gives it, and nothing is ever retried blindly (the
 * partner never executes a key twice, whatever is redelivered after the fault).
 */
import { createServer } from 'node:net';
import axios from 'axios';
import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  type FakeFault,
  type FakePartner,
  startFakePartner,
} from '../../src/partnerFake/fakePartnerServer.js';
import {
  IntentNotExecutedError,
  IntentOutcomeUnknownError,
  IntentRejectedError,
  LedgerError,
} from '../../src/shared/errors/index.js';
import type {
  CallContext,
  CallResult,
  Intent,
  IntentSpec,
  PartnerCall,
  RunResult,
} from '../../src/shared/types.js';
import { type Settled, settle, specFactory, sqlPool, waitFor } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger, testLedger } from '../support/testLedger.js';

const spec = specFactory('partner-fault');
/** The axios timeout of the ordinary callbacks: well below the fake's injected delays. */
const CLIENT_TIMEOUT_MS = 150;
/** The lease of the ledger used for answers that arrive after it. */
const SHORT_LEASE_MS = 1_000;
/** How long before the lease ends its signal fires (room to record "unknown" on a busy machine). */
const ABORT_MARGIN_MS = 250;
/** When the partner answers those calls: well after the lease. */
const LATE_ANSWER_MS = 1_600;

interface ChargeOptions {
  url: string;
  /** Pass the ledger's signal to axios (default) or ignore it, as a careless callback would. */
  honourSignal?: boolean;
  /** axios timeout; 0 = none. */
  timeoutMs?: number;
  /** Send this body instead of the spec's (to provoke the partner's own validation). */
  body?: unknown;
}

/**
 * The partner callback as an application writes it: POST the charge, read the partner's id from the JSON
 * answer. The body is read as text and parsed here, so an unreadable answer throws inside the callback.
 */
function charge(s: IntentSpec, options: ChargeOptions, seen: CallContext[] = []): PartnerCall {
  return async (context) => {
    seen.push(context);
    const response = await axios.post<string>(
      `${options.url}/v1/charges`,
      options.body ?? { reference: s.reference, amount: s.amount, currency: s.currency },
      {
        signal: options.honourSignal === false ? undefined : context.signal,
        timeout: options.timeoutMs ?? CLIENT_TIMEOUT_MS,
        responseType: 'text',
      },
    );
    const answer = JSON.parse(response.data) as { id?: unknown };
    if (typeof answer.id !== 'string') throw new TypeError('partner answer has no id');
    return { partnerReference: answer.id, response: { id: answer.id } } satisfies CallResult;
  };
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** One row of the figures printed at the end (docs/RELIABILITY.md). */
interface Figure {
  fault: string;
  first: string;
  state: string;
  attempts: string;
  executions: number;
  redeliveries: number;
  redeliveredCalls: number;
}

describe('faults: partner faults over real loopback HTTP', function () {
  this.timeout(20_000);
  const db = useFreshDatabase('partner_faults');
  let fake: FakePartner;
  let ledger: Ledger;
  let shortLease: Ledger;
  const shortLeaseLog: { level: string; object: object; message: string }[] = [];
  let sql: Pool;
  const figures: Figure[] = [];

  before(async () => {
    fake = await startFakePartner();
    ledger = await testLedger(db.url, { owner: 'faults' });
    shortLease = await testLedger(db.url, {
      owner: 'faults-short-lease',
      leaseMs: SHORT_LEASE_MS,
      abortMarginMs: ABORT_MARGIN_MS,
      logger: capturingLogger(shortLeaseLog),
    });
    sql = sqlPool(db.url);
  });
  after(async () => {
    if (figures.length > 0) console.log(`      figures: ${JSON.stringify(figures)}`);
    await fake?.close();
    await ledger?.close();
    await shortLease?.close();
    await sql?.end();
  });
  afterEach(() => fake.setFault(undefined));

  const executionsOf = (s: IntentSpec) => fake.executions.filter((e) => e.reference === s.reference).length;

  async function intentOf(s: IntentSpec): Promise<Intent> {
    const intent = await ledger.get(s.partner, s.key);
    if (!intent) throw new Error(`no intent for ${s.key}`);
    return intent;
  }

  /**
   * Redelivers `s` `times` times with a callback that would charge normally, and checks the ledger never
   * lets it through (no blind retry). Returns the errors.
   */
  async function redeliverWithoutCall(s: IntentSpec, times = 2): Promise<unknown[]> {
    const seen: CallContext[] = [];
    const errors: unknown[] = [];
    for (let i = 0; i < times; i++) {
      const result = await settle(ledger.run(s, charge(s, { url: fake.url }, seen)));
      expect(result.ok, 'a redelivery after this fault must not succeed').to.equal(false);
      errors.push((result as { error: unknown }).error);
    }
    expect(seen, 'the partner callback was called again').to.have.length(0);
    return errors;
  }

  function record(
    fault: string,
    first: Settled<RunResult>,
    intent: Intent,
    s: IntentSpec,
    redeliveries: number,
    redeliveredCalls = 0,
  ) {
    figures.push({
      fault,
      first: first.ok ? (first.value.replayed ? 'replayed' : 'completed') : errorName(first.error),
      state: intent.status,
      attempts: intent.attempts.map((a) => a.outcome ?? 'none').join(','),
      executions: executionsOf(s),
      redeliveries,
      redeliveredCalls,
    });
  }

  /** A fault whose outcome is unknown: the intent parks as `unknown` and is never retried. */
  async function expectUnknownAndNoRetry(
    label: string,
    fault: FakeFault,
    executed: 0 | 1,
    detail: RegExp,
    options: Partial<ChargeOptions> = {},
  ) {
    const s = spec();
    fake.failNext(1, fault);
    const first = await settle(ledger.run(s, charge(s, { url: fake.url, ...options })));
    expect(first.ok).to.equal(false);
    const error = (first as { error: unknown }).error;
    expect(error, String(error)).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(error).to.include({ code: 'INTENT_OUTCOME_UNKNOWN', key: s.key, attempt: 1 });
    expect(executionsOf(s)).to.equal(executed);

    const intent = await intentOf(s);
    expect(intent.status).to.equal('unknown');
    expect(intent.attempt).to.equal(1);
    expect(intent.attempts).to.have.length(1);
    expect(intent.attempts[0]).to.include({ outcome: 'unknown', owner: 'faults' });
    expect(JSON.stringify(intent.attempts[0].error)).to.match(detail);

    const again = await redeliverWithoutCall(s);
    for (const e of again) expect(e).to.be.instanceOf(IntentOutcomeUnknownError);
    expect(executionsOf(s), 'partner executions after redelivery').to.equal(executed);
    expect((await intentOf(s)).attempts).to.have.length(1);
    record(label, first, intent, s, again.length);
  }

  it('timeout (the partner answers after the client timeout): unknown; it DID execute, so it is never retried', async () => {
    await expectUnknownAndNoRetry(
      'timeout after execution',
      { kind: 'delay', ms: CLIENT_TIMEOUT_MS * 4 },
      1,
      /ECONNABORTED|ETIMEDOUT/,
    );
  });

  it('connection reset before the partner executed: unknown (a reset cannot prove that), never retried', async () => {
    // Conservative on purpose: the client cannot tell this reset from one after execution (next test).
    await expectUnknownAndNoRetry('reset before execution', { kind: 'reset-before' }, 0, /ECONNRESET/);
  });

  it('connection reset after the partner executed: unknown, executed once, never retried', async () => {
    await expectUnknownAndNoRetry('reset after execution', { kind: 'reset-after' }, 1, /ECONNRESET/);
  });

  it('HTTP 500 (not executed) and 503 (executed): unknown either way, never retried', async () => {
    await expectUnknownAndNoRetry('500, not executed', { kind: 'status', status: 500 }, 0, /HTTP 500/);
    await expectUnknownAndNoRetry(
      '503, executed',
      { kind: 'status', status: 503, execute: true },
      1,
      /HTTP 503/,
    );
  });

  it('malformed 200 body (HTML where JSON was expected): the callback throws parsing it -> unknown, executed once, never retried', async () => {
    await expectUnknownAndNoRetry(
      'malformed 200 body',
      { kind: 'garbage', body: '<html><body>Service temporarily unavailable</body></html>' },
      1,
      /SyntaxError/,
    );
  });

  it('HTTP 429: not executed; the redelivery claims attempt 2 and the partner executes exactly once', async () => {
    const s = spec();
    fake.failNext(1, { kind: 'status', status: 429, retryAfter: 1 });
    const first = await settle(ledger.run(s, charge(s, { url: fake.url })));
    const error = (first as { error: unknown }).error;
    expect(error).to.be.instanceOf(IntentNotExecutedError);
    expect(error).to.include({ code: 'INTENT_NOT_EXECUTED', attempt: 1, retryable: true });
    expect(executionsOf(s)).to.equal(0);
    expect((await intentOf(s)).status).to.equal('not_executed');

    const seen: CallContext[] = [];
    const retry = await ledger.run(s, charge(s, { url: fake.url }, seen));
    expect(seen.map((c) => c.attempt)).to.deep.equal([2]);
    expect(retry).to.include({ status: 'completed', replayed: false, attempt: 2 });
    expect(executionsOf(s)).to.equal(1);
    expect(retry.partnerReference).to.equal(fake.executions.find((e) => e.reference === s.reference)?.id);

    const replay = await ledger.run(s, charge(s, { url: fake.url }, seen));
    expect(replay).to.include({ replayed: true, attempt: 2, partnerReference: retry.partnerReference });
    expect(seen).to.have.length(1);
    expect(executionsOf(s)).to.equal(1);
    const intent = await intentOf(s);
    expect(intent.status).to.equal('completed');
    expect(intent.attempts.map((a) => a.outcome)).to.deep.equal(['not_executed', 'completed']);
    record('429 then retry', first, intent, s, 2, 1);
  });

  it('HTTP 400 and the partner\u2019s own 422: rejected; redeliveries replay the rejection and never call again', async () => {
    const cases: { label: string; s: IntentSpec; arrange: () => void; body?: unknown; status: number }[] = [
      {
        label: '400 injected',
        s: spec(),
        arrange: () => fake.failNext(1, { kind: 'status', status: 400 }),
        status: 400,
      },
      // A caller bug the partner refuses: the amount sent as a JSON number.
      { label: '422 from validation', s: spec(), arrange: () => undefined, body: 'number', status: 422 },
    ];
    for (const { label, s, arrange, body, status } of cases) {
      arrange();
      const call = charge(s, {
        url: fake.url,
        body: body ? { reference: s.reference, amount: 10, currency: s.currency } : undefined,
      });
      const first = await settle(ledger.run(s, call));
      const error = (first as { error: unknown }).error;
      expect(error, label).to.be.instanceOf(IntentRejectedError);
      expect(error).to.include({ code: 'INTENT_REJECTED', replayed: false });
      expect((error as IntentRejectedError).reason).to.include({ status });

      const again = await redeliverWithoutCall(s);
      for (const e of again) {
        expect(e).to.be.instanceOf(IntentRejectedError);
        expect(e).to.include({ replayed: true });
        expect((e as IntentRejectedError).reason).to.deep.equal((error as IntentRejectedError).reason);
      }
      const intent = await intentOf(s);
      expect(intent.status).to.equal('rejected');
      expect(intent.attempts.map((a) => a.outcome)).to.deep.equal(['rejected']);
      expect(executionsOf(s)).to.equal(0);
      record(label, first, intent, s, again.length);
    }
  });

  it('connection refused (nothing listening): not executed; the redelivery retries and executes once', async () => {
    const s = spec();
    const port = await closedPort();
    const first = await settle(ledger.run(s, charge(s, { url: `http://127.0.0.1:${port}` })));
    const error = (first as { error: unknown }).error;
    expect(error).to.be.instanceOf(IntentNotExecutedError);
    expect((error as Error).message).to.match(/ECONNREFUSED/);
    const seen: CallContext[] = [];
    const retry = await ledger.run(s, charge(s, { url: fake.url }, seen));
    expect(retry).to.include({ status: 'completed', attempt: 2, replayed: false });
    expect(seen).to.have.length(1);
    expect(executionsOf(s)).to.equal(1);
    const intent = await intentOf(s);
    expect(intent.attempts.map((a) => a.outcome)).to.deep.equal(['not_executed', 'completed']);
    record('connection refused then retry', first, intent, s, 1, 1);
  });

  describe(`answers after the lease (lease ${SHORT_LEASE_MS} ms, the signal fires ${ABORT_MARGIN_MS} ms earlier)`, () => {
    /** Asserts the attempt was settled as unknown while its lease still ran (compared in SQL). */
    async function expectUnknownRecordedInsideLease(intentId: string) {
      const { rows } = await sql.query<{ outcome: string; inside: boolean }>(
        `SELECT outcome, ended_at < lease_expires_at AS inside FROM intent_attempt_history WHERE intent_id = $1 AND attempt = 1`,
        [intentId],
      );
      expect(rows[0]).to.deep.equal({ outcome: 'unknown', inside: true });
    }

    it('a callback that IGNORES the signal: unknown before the lease ends, then the late success is recorded', async () => {
      const s = spec();
      fake.failNext(1, { kind: 'delay', ms: LATE_ANSWER_MS });
      const seen: CallContext[] = [];
      const startedAt = Date.now();
      const first = await settle(
        shortLease.run(s, charge(s, { url: fake.url, honourSignal: false, timeoutMs: 0 }, seen)),
      );
      const elapsed = Date.now() - startedAt;
      const error = (first as { error: unknown }).error;
      expect(error).to.be.instanceOf(IntentOutcomeUnknownError);
      expect((error as Error).message).to.match(/outlived its lease/);
      // Answered before the partner's late answer came, and recorded inside the lease (checked in SQL below).
      expect(elapsed).to.be.below(LATE_ANSWER_MS);
      expect(seen[0].signal.aborted).to.equal(true);
      expect(executionsOf(s)).to.equal(1);
      await expectUnknownRecordedInsideLease(seen[0].intentId);
      expect((await intentOf(s)).status).to.equal('unknown');

      // Nothing else settled it: the partner's late answer is the truth and completes the intent.
      const intent = await waitFor(
        'the late answer to complete the intent',
        async () => {
          const found = await intentOf(s);
          return found.status === 'completed' ? found : undefined;
        },
        5_000,
        25,
      );
      const execution = fake.executions.find((e) => e.reference === s.reference);
      expect(intent.partnerReference).to.equal(execution?.id);
      expect(intent.attempts.map((a) => a.outcome)).to.deep.equal(['completed']);
      expect(shortLeaseLog.some((e) => e.message === 'late answer recorded after abort')).to.equal(true);

      const callsBefore = seen.length;
      const replay = await ledger.run(s, charge(s, { url: fake.url }, seen));
      expect(replay).to.include({ replayed: true, attempt: 1, partnerReference: execution?.id });
      expect(seen).to.have.length(callsBefore);
      expect(executionsOf(s)).to.equal(1);
      record('answer after the lease, signal ignored', first, intent, s, 1);
    });

    it('a callback that honours the signal: aborted and unknown before the lease ends; the answer is lost, never retried', async () => {
      const s = spec();
      fake.failNext(1, { kind: 'delay', ms: LATE_ANSWER_MS });
      const seen: CallContext[] = [];
      const startedAt = Date.now();
      const first = await settle(shortLease.run(s, charge(s, { url: fake.url, timeoutMs: 0 }, seen)));
      expect(Date.now() - startedAt).to.be.below(LATE_ANSWER_MS);
      expect(seen[0].signal.aborted).to.equal(true);
      expect((first as { error: unknown }).error).to.be.instanceOf(IntentOutcomeUnknownError);
      await expectUnknownRecordedInsideLease(seen[0].intentId);
      // Past the moment the partner answered: nothing came back to record.
      await new Promise((resolve) => setTimeout(resolve, LATE_ANSWER_MS - ABORT_MARGIN_MS));
      const intent = await intentOf(s);
      expect(intent.status).to.equal('unknown');
      expect(executionsOf(s)).to.equal(1);
      const again = await redeliverWithoutCall(s);
      for (const e of again) expect(e).to.be.instanceOf(IntentOutcomeUnknownError);
      expect(executionsOf(s)).to.equal(1);
      record('answer after the lease, signal honoured', first, intent, s, again.length);
    });

    it('a partner that hangs (executes, never answers): the signal aborts the call before the lease ends -> unknown, never retried', async () => {
      const s = spec();
      fake.failNext(1, { kind: 'hang' });
      const seen: CallContext[] = [];
      const first = await settle(shortLease.run(s, charge(s, { url: fake.url, timeoutMs: 0 }, seen)));
      expect(seen[0].signal.aborted).to.equal(true);
      expect((first as { error: unknown }).error).to.be.instanceOf(IntentOutcomeUnknownError);
      await expectUnknownRecordedInsideLease(seen[0].intentId);
      const intent = await intentOf(s);
      expect(intent.status).to.equal('unknown');
      expect(executionsOf(s)).to.equal(1);
      const again = await redeliverWithoutCall(s);
      for (const e of again) expect(e).to.be.instanceOf(IntentOutcomeUnknownError);
      record('hang', first, intent, s, again.length);
    });
  });

  // Mocha runs a suite's own tests before its nested suites: this one comes last in its own suite.
  describe('summary', () => {
    it('across every fault above: no key executed more than once, every error a documented ledger error', () => {
      const perReference = new Map<string, number>();
      for (const e of fake.executions)
        perReference.set(e.reference, (perReference.get(e.reference) ?? 0) + 1);
      expect([...perReference.values()].every((n) => n === 1)).to.equal(true);
      expect(figures.length).to.equal(13);
      for (const figure of figures) {
        expect(figure.first, figure.fault).to.not.match(/^RAW/);
        expect(figure.executions, figure.fault).to.be.at.most(1);
        expect(figure.redeliveredCalls, figure.fault).to.be.at.most(1);
      }
    });
  });
});

function errorName(error: unknown): string {
  if (error instanceof LedgerError) return error.name;
  return `RAW ${error instanceof Error ? error.name : typeof error}`;
}
