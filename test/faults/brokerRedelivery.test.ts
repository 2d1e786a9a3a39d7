/**
 * Broker redelivery: the example consumer (examples/rabbitmqConsumer.ts) reads order messages from a real
 * RabbitMQ, in child processes that are SIGKILLed mid-stream and restarted beside a second consumer, and
 * charges a real loopback HTTP partner through the ledger. Whatever the broker redelivers, and whatever the
 * producers published twice, the partner executes each order at most once. Messages whose outcome is
 * unknown are parked (never acked away); once the reconciler has settled their intents from the partner's
 * listing, the parked messages come back to a restarted consumer, and every order ends executed exactly once.
 *
 * Runs wherever RabbitMQ answers at AMQP_URL (default amqp://guest:guest@127.0.0.1:5672); says so and
 * skips otherwise.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage, type Message } from 'amqplib';
import { expect } from 'chai';
import type { Pool } from 'pg';
import pino from 'pino';
import {
  decide,
  PARK_COUNT_HEADER,
  parkCountOf,
  parkedCopyOptions,
} from '../../examples/rabbitmqConsumer.js';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import {
  IdempotencyKeyConflictError,
  IntentInFlightError,
  IntentNotExecutedError,
  IntentOutcomeUnknownError,
  IntentRejectedError,
  LateCompletionError,
  LedgerUnavailableError,
} from '../../src/shared/errors/index.js';
import { fakePartnerReconciler } from '../reconcile/support.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type ConsumerLine, type ConsumerProcess, startConsumer } from './consumerProcess.js';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const ORDERS = 300;
const PUBLISHED_TWICE = 60;
const PREFETCH = 10;
const CONSUMER_LEASE_MS = 2_000;
/** Every Nth charge request is answered 429 (not executed): those orders need a second attempt. */
const RATE_LIMIT_EVERY = 37;
/** Every Nth charge request is answered 503 without executing: outcome unknown, in truth not executed. */
const UNKNOWN_NOT_EXECUTED_EVERY = 53;
/** Every Nth charge request is executed, then its connection reset: outcome unknown, in truth executed. */
const UNKNOWN_EXECUTED_EVERY = 71;
/** The partner answers each charge this late (it has executed already), so kills land mid-call. */
const PARTNER_LATENCY_MS = 20;
const ACKS_BEFORE_KILL = 50;
/** The restarted consumer works alone until it has acked this many, then the second consumer joins. */
const B_JOINS_AFTER_ACKS = 20;
/**
 * The restarted consumer is killed at this many acks: soon after B joins, since B shares the queue from then
 * on and, on a loaded machine, can drain it first (seen in CI: A2 stuck at 40 acks of 50, everything left
 * parked, nothing in hand).
 */
const A2_ACKS_BEFORE_KILL = B_JOINS_AFTER_ACKS + 10;
/**
 * How long a parked message waits before it comes back (the example's default is 15 minutes, the
 * reconciliation schedule): while its intent is unknown it cycles through the parking queue at this pace.
 */
const PARK_DELAY_MS = 300;
/** Drained only after this long without a line other than a park: longer than a parked message is away. */
const QUIET_MS = PARK_DELAY_MS + 700;

const OUTCOMES_ACKED = new Set(['completed', 'replayed', 'rejected']);
const OUTCOMES_REQUEUED = new Set(['not_executed', 'in_flight']);

const context = { partner: 'acme-pay', key: 'order-1:charge', intentId: '1' };

describe('examples/rabbitmqConsumer: decide() and the parked copy', () => {
  const now = Date.parse('2026-11-28T12:00:00Z');

  it('parks an outcome unknown, whether the call lost its answer or a redelivery still finds it unknown', () => {
    const fresh = new IntentOutcomeUnknownError({
      ...context,
      attempt: 1,
      detail: 'partner answered HTTP 503',
    });
    const replayed = new IntentOutcomeUnknownError({ ...context, attempt: 2 });
    expect(decide(fresh, 250, now)).to.deep.equal({ action: 'park', outcome: 'outcome_unknown', attempt: 1 });
    expect(decide(replayed, 250, now)).to.deep.equal({
      action: 'park',
      outcome: 'outcome_unknown',
      attempt: 2,
    });
  });

  it('acks what is decided, requeues what a later delivery can do, dead-letters what none can', () => {
    const rejected = new IntentRejectedError({
      ...context,
      reason: { message: 'card declined' },
      replayed: true,
    });
    expect(decide(rejected, 250, now)).to.deep.equal({
      action: 'ack',
      outcome: 'rejected',
      detail: 'card declined',
    });
    const late = new LateCompletionError({
      ...context,
      attempt: 1,
      discrepancyId: '9',
      settledAs: 'not_executed',
      corrected: false,
    });
    expect(decide(late, 250, now)).to.deep.equal({ action: 'ack', outcome: 'late_completion', attempt: 1 });
    const notExecuted = new IntentNotExecutedError({ ...context, attempt: 1, detail: 'HTTP 429' });
    expect(decide(notExecuted, 250, now)).to.deep.equal({
      action: 'requeue',
      outcome: 'not_executed',
      attempt: 1,
      delayMs: 250,
    });
    // In flight: held until the lease ends, at least the retry delay, at most 1 s.
    const inFlight = (ms: number) =>
      new IntentInFlightError({ ...context, leaseExpiresAt: new Date(now + ms) });
    expect(decide(inFlight(600), 250, now)).to.deep.equal({
      action: 'requeue',
      outcome: 'in_flight',
      delayMs: 600,
    });
    expect(decide(inFlight(10), 250, now).delayMs).to.equal(250);
    expect(decide(inFlight(30_000), 250, now).delayMs).to.equal(1_000);
    const unavailable = new LedgerUnavailableError({
      ...context,
      during: 'claiming',
      cause: new Error('down'),
    });
    expect(decide(unavailable, 250, now)).to.include({ action: 'requeue', outcome: 'ledger_unavailable' });
    expect(decide(new IdempotencyKeyConflictError(context), 250, now)).to.include({
      action: 'dead-letter',
      outcome: 'key_conflict',
    });
    expect(decide(new TypeError('orderId must be a non-empty string'), 250, now)).to.deep.equal({
      action: 'dead-letter',
      outcome: 'invalid',
      detail: 'TypeError: orderId must be a non-empty string',
    });
  });

  it('the parked copy keeps the message (id, headers, properties), counts its parks and expires', () => {
    const message = {
      properties: {
        contentType: 'application/json',
        contentEncoding: undefined,
        headers: { tenant: 'br', [PARK_COUNT_HEADER]: 2 },
        deliveryMode: 2,
        priority: undefined,
        correlationId: 'corr-1',
        replyTo: undefined,
        expiration: undefined,
        messageId: 'order-1',
        timestamp: 1_700_000_000,
        type: 'order.paid',
        userId: 'producer',
        appId: 'shop',
        clusterId: undefined,
      },
    } satisfies Pick<ConsumeMessage, 'properties'>;
    expect(parkCountOf(message)).to.equal(2);
    expect(parkCountOf({ properties: { headers: undefined } })).to.equal(0);
    expect(parkCountOf({ properties: { headers: { [PARK_COUNT_HEADER]: 'x' } } })).to.equal(0);
    const options = parkedCopyOptions(message, 3, 900_000);
    expect(options).to.deep.include({
      contentType: 'application/json',
      headers: { tenant: 'br', [PARK_COUNT_HEADER]: 3 },
      correlationId: 'corr-1',
      messageId: 'order-1',
      timestamp: 1_700_000_000,
      type: 'order.paid',
      appId: 'shop',
      expiration: '900000',
      persistent: true,
      mandatory: true,
    });
    // The broker checks user-id against the publishing connection: the consumer's user is not the producer's.
    expect(options.userId).to.equal(undefined);
  });
});

describe('faults: broker redelivery (RabbitMQ, consumer processes killed mid-stream)', function () {
  this.timeout(180_000);
  const db = useFreshDatabase('broker');
  let broker: ChannelModel | undefined;
  let sql: Pool;
  const consumers: ConsumerProcess[] = [];
  const queues: string[] = [];

  before(async function () {
    try {
      broker = await amqp.connect(AMQP_URL, { timeout: 3_000 });
      broker.on('error', () => undefined);
    } catch (error) {
      console.log(
        `    RabbitMQ not reachable at ${redact(AMQP_URL)}: broker redelivery test skipped (${(error as Error).message || (error as { code?: string }).code})`,
      );
      this.skip();
    }
    sql = sqlPool(db.url);
  });

  after(async () => {
    await Promise.all(consumers.map((consumer) => consumer.stop('SIGKILL')));
    if (broker) {
      const channel = await broker.createChannel();
      for (const queue of queues) await channel.deleteQueue(queue).catch(() => undefined);
      await channel.close().catch(() => undefined);
      await broker.close().catch(() => undefined);
    }
    await sql?.end();
  });

  interface Scenario {
    label: string;
    honoursKey: boolean;
  }

  interface IntentRow {
    reference: string;
    status: string;
    attempt: number;
    partner_reference: string | null;
    lease_running: boolean;
    last_owner: string | null;
    last_outcome: string | null;
  }

  const intentsOf = async (runTag: string): Promise<IntentRow[]> =>
    (
      await sql.query<IntentRow>(
        `SELECT i.reference, i.status, i.attempt, i.partner_reference, coalesce(i.settled_at IS NULL AND i.lease_expires_at > now(), false) AS lease_running,
                a.owner AS last_owner, a.outcome AS last_outcome
           FROM intents i JOIN intent_attempt_history a ON a.intent_id = i.id AND a.attempt = i.attempt
          WHERE i.reference LIKE $1`,
        [`${runTag}-order-%`],
      )
    ).rows;

  async function runScenario({ label, honoursKey }: Scenario) {
    const started = Date.now();
    const runTag = `${label}-${process.pid}-${Date.now().toString(36)}`;
    const queue = `intent-ledger-faults-${runTag}`;
    const parkQueue = `${queue}.parked`;
    const partner = `acme-pay-${label}`;
    queues.push(queue, parkQueue);
    const fake: FakePartner = await startFakePartner({ honoursKey });
    let chargeRequests = 0;
    const injected = { rateLimited: 0, unknownNotExecuted: 0, unknownExecuted: 0 };
    fake.setFault((request) => {
      if (request.method !== 'POST') return undefined;
      chargeRequests++;
      if (chargeRequests % RATE_LIMIT_EVERY === 0) {
        injected.rateLimited++;
        return { kind: 'status', status: 429, retryAfter: 0 };
      }
      if (chargeRequests % UNKNOWN_NOT_EXECUTED_EVERY === 0) {
        injected.unknownNotExecuted++;
        return { kind: 'status', status: 503 };
      }
      if (chargeRequests % UNKNOWN_EXECUTED_EVERY === 0) {
        injected.unknownExecuted++;
        return { kind: 'reset-after' };
      }
      return { kind: 'delay', ms: PARTNER_LATENCY_MS };
    });
    const client = await (broker as ChannelModel).createConfirmChannel();
    try {
      // Publish: every order once, 60 of them a second time (a producer that retried), shuffled. The message
      // id is the producer's, stable across its retries.
      const orders = Array.from({ length: ORDERS }, (_, i) => ({
        orderId: `${runTag}-order-${i + 1}`,
        amount: `${10 + (i % 90)}.${String(i % 100).padStart(2, '0')}`,
        currency: 'BRL',
      }));
      const messages = [...orders, ...orders.filter((_, i) => i % (ORDERS / PUBLISHED_TWICE) === 0)];
      shuffle(messages);
      const copiesOf = countBy(messages, (m) => m.orderId);
      const bodyOf = new Map(orders.map((o) => [o.orderId, JSON.stringify(o)]));
      await client.assertQueue(queue, { durable: true });
      for (const message of messages) {
        client.sendToQueue(queue, Buffer.from(JSON.stringify(message)), {
          persistent: true,
          contentType: 'application/json',
          messageId: message.orderId,
        });
      }
      await client.waitForConfirms();
      expect((await client.checkQueue(queue)).messageCount).to.equal(messages.length);

      const env = {
        AMQP_URL,
        QUEUE: queue,
        PREFETCH: String(PREFETCH),
        PARTNER_URL: fake.url,
        PARTNER_NAME: partner,
        PARTNER_HONOURS_KEY: honoursKey ? '1' : '0',
        PARTNER_TIMEOUT_MS: '1000',
        DATABASE_URL: db.url,
        LEASE_MS: String(CONSUMER_LEASE_MS),
        RETRY_DELAY_MS: '50',
        PARK_DELAY_MS: String(PARK_DELAY_MS),
      };
      const spawnConsumer = (name: string) => {
        const consumer = startConsumer(`${label}-${name}`, env);
        consumers.push(consumer);
        return consumer;
      };
      const kills: { name: string; pid: number; acks: number; inHand: number }[] = [];
      const killMidStream = async (consumer: ConsumerProcess, afterAcks: number) => {
        await consumer.waitFor(
          `${afterAcks} acks with messages in hand`,
          () => consumer.acks() >= afterAcks && consumer.inHand() > 0,
        );
        const inHand = consumer.inHand();
        const acks = consumer.acks();
        const { signal } = await consumer.stop('SIGKILL');
        expect(signal).to.equal('SIGKILL');
        kills.push({ name: consumer.name, pid: consumer.child.pid as number, acks, inHand });
      };
      const stopCleanly = async (live: ConsumerProcess[]) => {
        const ends = await Promise.all(live.map((c) => c.stop('SIGTERM')));
        for (const [i, end] of ends.entries()) {
          expect(end, `${live[i].name} exit; stderr: ${live[i].stderr()}`).to.deep.equal({
            code: 0,
            signal: null,
          });
          expect(live[i].lines.some((l) => l.event === 'stopped')).to.equal(true);
        }
      };

      // 1. One consumer; SIGKILL it mid-stream.
      const first = spawnConsumer('A1');
      await killMidStream(first, ACKS_BEFORE_KILL);
      // 2. Restart it, a second consumer joining beside it; SIGKILL the restarted one mid-stream too.
      const second = spawnConsumer('A2');
      // B joins once A2 has got past what A1 left in flight: each of those waits up to a second for A1's
      // lease before it is requeued, and with B there from the start B could drain the queue while A2 waits,
      // so that A2 never reached its kill point (seen: 6 acks in 20 s).
      await second.waitFor(`${B_JOINS_AFTER_ACKS} acks`, () => second.acks() >= B_JOINS_AFTER_ACKS);
      const other = spawnConsumer('B');
      await killMidStream(second, A2_ACKS_BEFORE_KILL);
      // 3. Restart it again, and let both drain the queue: what is left cycles through the parking queue.
      const third = spawnConsumer('A3');
      const live = [other, third];
      await Promise.all(live.map((c) => c.waitFor('ready', () => c.lines.some((l) => l.event === 'ready'))));
      await waitUntilDrained(client, [queue], live);

      // 4. SIGTERM: each finishes what it holds (parks included), closes channels, connection and ledger,
      // and exits 0.
      await stopCleanly(live);

      // What the consumers did with each delivery.
      const all = [first, second, other, third];
      const lines = all.flatMap((c) => c.lines.filter((l) => l.event === 'message'));
      const byOutcome = countBy(lines, (l) => `${l.outcome} -> ${l.action}`);
      for (const line of lines) {
        if (line.action === 'ack') expect(OUTCOMES_ACKED, JSON.stringify(line)).to.include(line.outcome);
        else if (line.action === 'park') {
          expect(line.outcome, JSON.stringify(line)).to.equal('outcome_unknown');
          expect(line.parks, JSON.stringify(line)).to.be.a('number').and.at.least(1);
        } else {
          expect(line.action, JSON.stringify(line)).to.equal('requeue');
          expect(OUTCOMES_REQUEUED, JSON.stringify(line)).to.include(line.outcome);
        }
      }
      // The key is the business key, never the delivery tag: every line of an order has the same key.
      for (const line of lines) expect(line.key).to.equal(`${line.orderId}:charge`);

      // The partner's record and the ledger's, once every lease of the run has ended.
      await waitForLeasesToEnd(sql, runTag);
      const executionsByOrder = countBy(fake.executions, (e) => e.reference);
      const intents = await intentsOf(runTag);
      const killedOwners = new Set(kills.map((k) => `${k.name}:${k.pid}`));
      const executionIdByOrder = new Map(fake.executions.map((e) => [e.reference, e.id]));

      // At most one execution per order, whatever happened (invariant 2, no blind retry).
      for (const [orderId, count] of executionsByOrder) expect(count, orderId).to.equal(1);
      // Every order reached the ledger.
      expect(intents).to.have.length(ORDERS);
      const completed = intents.filter((i) => i.status === 'completed');
      for (const intent of completed) {
        expect(executionIdByOrder.get(intent.reference), intent.reference).to.equal(intent.partner_reference);
      }
      // What is not completed waits for reconciliation: it was in the hands of a killed consumer (no outcome
      // recorded), or the partner's answer was a 503 or a reset (recorded unknown).
      const stuck = intents.filter((i) => i.status !== 'completed');
      for (const intent of stuck) {
        expect(intent.lease_running, JSON.stringify(intent)).to.equal(false);
        if (intent.last_outcome === null) {
          expect(['in_progress', 'unknown'], JSON.stringify(intent)).to.include(intent.status);
          expect(killedOwners, JSON.stringify(intent)).to.include(intent.last_owner);
        } else {
          expect(intent, JSON.stringify(intent)).to.deep.include({
            status: 'unknown',
            last_outcome: 'unknown',
          });
        }
      }
      expect(stuck.length).to.be.at.most(
        kills.length * PREFETCH + injected.unknownNotExecuted + injected.unknownExecuted,
      );
      const stuckExecuted = stuck.filter((i) => executionsByOrder.has(i.reference)).length;
      expect(fake.executions.length).to.equal(completed.length + stuckExecuted);
      if (honoursKey) {
        // The partner deduplicates by our key: a dead consumer's attempt is retried with the same key once
        // its lease ends, and a parked message whose outcome is unknown is retried with the same key when it
        // comes back, so every order ends completed and executed exactly once without reconciliation.
        expect(stuck).to.deep.equal([]);
        expect(executionsByOrder.size).to.equal(ORDERS);
      }

      // 5. Parked, never lost: with no consumer left, every parked copy expires back into the work queue.
      // It then holds exactly the orders left unknown: one message per published copy of each (more only if
      // a kill landed between a park's confirm and the original's ack), each the message as published plus
      // its park count.
      await waitFor('every parked copy back in the work queue', async () => {
        const parked = await client.checkQueue(parkQueue);
        return parked.messageCount === 0;
      });
      const returned = await takeAll(broker as ChannelModel, queue);
      const returnedByOrder = countBy(returned, (m) => JSON.parse(m.content.toString()).orderId);
      const stuckOrders = new Set(stuck.map((i) => i.reference));
      expect(new Set(returnedByOrder.keys())).to.deep.equal(stuckOrders);
      let extraCopies = 0;
      for (const [orderId, count] of returnedByOrder) {
        expect(count, orderId).to.be.at.least(copiesOf.get(orderId) as number);
        extraCopies += count - (copiesOf.get(orderId) as number);
      }
      expect(extraCopies).to.be.at.most(kills.reduce((sum, k) => sum + k.inHand, 0));
      for (const message of returned) {
        const orderId = JSON.parse(message.content.toString()).orderId as string;
        expect(message.content.toString()).to.equal(bodyOf.get(orderId));
        expect(message.properties).to.deep.include({ messageId: orderId, contentType: 'application/json' });
        expect(message.properties.headers?.[PARK_COUNT_HEADER]).to.be.at.least(1);
        const death = message.properties.headers?.['x-death']?.[0];
        expect(death).to.deep.include({ queue: parkQueue, reason: 'expired' });
      }
      // Without deduplication a parked order stays unknown until reconciled; with it, a parked message that
      // comes back is retried with the same key, and its order is completed by now.
      const parkLines = lines.filter((l) => l.action === 'park');
      if (!honoursKey) expect(new Set(parkLines.map((l) => l.orderId))).to.deep.equal(stuckOrders);

      // 6. Reconcile the real way: the partner's listing (GET /v1/settlements) against the ledger. Executed
      // ones become completed, the others not_executed; nothing is a discrepancy.
      const [run] = await reconcile({
        pool: sql,
        reconciler: listingReconciler(partner, fake.url),
        logger: pino({ level: 'silent' }),
      });
      expect(run, JSON.stringify(run)).to.deep.include({
        status: 'succeeded',
        resolved: { completed: stuckExecuted, notExecuted: stuck.length - stuckExecuted },
        error: null,
      });
      expect(
        Object.values(run.discrepancies).every((n) => n === 0),
        JSON.stringify(run.discrepancies),
      ).to.equal(true);
      const settled = new Map((await intentsOf(runTag)).map((i) => [i.reference, i]));
      for (const intent of stuck) {
        const expected = executionsByOrder.has(intent.reference) ? 'completed' : 'not_executed';
        expect(settled.get(intent.reference)?.status, intent.reference).to.equal(expected);
      }

      // 7. The parked messages come back to a restarted consumer: completed ones are replayed and acked, not
      // executed ones are charged as the next attempt; nothing is parked again.
      fake.setFault((request) => {
        if (request.method === 'POST') chargeRequests++;
        return request.method === 'POST' ? { kind: 'delay', ms: PARTNER_LATENCY_MS } : undefined;
      });
      const executionsBefore = fake.executions.length;
      const fourth = spawnConsumer('A4');
      await fourth.waitFor('ready', () => fourth.lines.some((l) => l.event === 'ready'));
      await waitUntilDrained(client, [queue, parkQueue], [fourth]);
      await stopCleanly([fourth]);
      const backLines = fourth.lines.filter(
        (l): l is ConsumerLine & { orderId: string } => l.event === 'message',
      );
      const backByOutcome = countBy(backLines, (l) => `${l.outcome} -> ${l.action}`);
      for (const line of backLines) {
        expect(stuckOrders, JSON.stringify(line)).to.include(line.orderId);
        if (line.action === 'requeue') expect(line.outcome, JSON.stringify(line)).to.equal('in_flight');
        else {
          expect(line.action, JSON.stringify(line)).to.equal('ack');
          const before = settled.get(line.orderId) as IntentRow;
          if (line.outcome === 'completed') {
            expect(before.status, JSON.stringify(line)).to.equal('not_executed');
            expect(line.attempt, JSON.stringify(line)).to.equal(before.attempt + 1);
          } else {
            expect(line.outcome, JSON.stringify(line)).to.equal('replayed');
          }
        }
      }
      expect(backLines.filter((l) => l.action === 'ack')).to.have.length(returned.length);
      const notExecutedOrders = stuck.filter((i) => settled.get(i.reference)?.status === 'not_executed');
      const charged = backLines.filter((l) => l.outcome === 'completed').map((l) => l.orderId);
      expect(charged.sort()).to.deep.equal(notExecutedOrders.map((i) => i.reference).sort());
      expect(fake.executions.length - executionsBefore).to.equal(notExecutedOrders.length);

      // Every order executed by the partner exactly once, every intent completed with that execution, and
      // nothing left in either queue.
      const finalExecutions = countBy(fake.executions, (e) => e.reference);
      expect(finalExecutions.size).to.equal(ORDERS);
      for (const [orderId, count] of finalExecutions) expect(count, orderId).to.equal(1);
      const finalIntents = await intentsOf(runTag);
      const finalExecutionIds = new Map(fake.executions.map((e) => [e.reference, e.id]));
      for (const intent of finalIntents) {
        expect(intent.status, intent.reference).to.equal('completed');
        expect(intent.partner_reference, intent.reference).to.equal(finalExecutionIds.get(intent.reference));
      }
      expect((await client.checkQueue(queue)).messageCount).to.equal(0);
      expect((await client.checkQueue(parkQueue)).messageCount).to.equal(0);
      const { rows: discrepancies } = await sql.query('SELECT kind FROM discrepancies WHERE partner = $1', [
        partner,
      ]);
      expect(discrepancies).to.deep.equal([]);

      const parksByOrder = countBy(parkLines, (l) => l.orderId as string);
      const figures = {
        scenario: label,
        messagesPublished: messages.length,
        distinctOrders: ORDERS,
        publishedTwice: messages.length - ORDERS,
        deliveriesHandled: lines.length - parkLines.length,
        redeliveriesSeen: lines.filter((l) => l.redelivered).length,
        kills: kills.map((k) => `${k.name} after ${k.acks} acks, ${k.inHand} in hand`),
        injected,
        byOutcome: Object.fromEntries(byOutcome),
        partnerExecutions: executionsBefore,
        completed: completed.length,
        secondAttempts: intents.filter((i) => i.attempt > 1).length,
        awaitingReconciliation: stuck.length,
        awaitingReconciliationExecuted: stuckExecuted,
        parkedOrders: parksByOrder.size,
        parks: parkLines.length,
        mostParksOfAMessage: Math.max(0, ...parkLines.map((l) => l.parks ?? 0)),
        returnedMessages: returned.length,
        extraCopies,
        reconciled: run.resolved,
        afterReturn: Object.fromEntries(backByOutcome),
        chargeRequests,
        partnerExecutionsFinal: fake.executions.length,
        seconds: (Date.now() - started) / 1000,
      };
      console.log(`      figures: ${JSON.stringify(figures)}`);
    } finally {
      await client.close().catch(() => undefined);
      await fake.close();
    }
  }

  it('partner without deduplication: no order executed twice; outcomes unknown are parked, reconciled, and come back to be replayed or charged as the next attempt', async () => {
    await runScenario({ label: 'nodedup', honoursKey: false });
  });

  it('partner honouring Idempotency-Key: every order executed exactly once and every intent completed', async () => {
    await runScenario({ label: 'dedup', honoursKey: true });
  });
});

/** An API reconciler reading the fake partner's listing; it lists an execution the moment it happens. */
function listingReconciler(partner: string, baseUrl: string): ReconcilerConfig {
  // The test's leases are 2 s and have ended: every unknown intent is stuck at once.
  // The fake partner dates its executions by this machine's clock, the database's: no clock skew.
  return fakePartnerReconciler(
    partner,
    { baseUrl },
    { stuckAfter: 0, settlementLag: 0, clockSkew: 0, deadline: '1d' },
  );
}

/**
 * Drained: the queues are empty, and every consumer holds nothing for long (a parked message passing
 * through is in hand for milliseconds) and has logged nothing but parks for QUIET_MS, three checks running.
 */
async function waitUntilDrained(
  channel: { checkQueue(queue: string): Promise<{ messageCount: number }> },
  queues: string[],
  consumers: ConsumerProcess[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietChecks = 0;
  while (quietChecks < 3) {
    if (Date.now() > deadline) {
      const counts = await Promise.all(queues.map((q) => channel.checkQueue(q)));
      throw new Error(
        `not drained within ${timeoutMs} ms: ${queues.map((q, i) => `${q} ${counts[i].messageCount}`).join(', ')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (const consumer of consumers) {
      if (!consumer.alive()) throw new Error(`${consumer.name} died: ${consumer.stderr()}`);
    }
    const counts = await Promise.all(queues.map((q) => channel.checkQueue(q)));
    const empty = counts.every((c) => c.messageCount === 0);
    const idle = consumers.every((c) => c.busyFor() < 250 && Date.now() - c.lastWorkAt() > QUIET_MS);
    quietChecks = empty && idle ? quietChecks + 1 : 0;
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`no "${what}" within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sleeps until PostgreSQL's clock is past every lease of the run's intents. */
async function waitForLeasesToEnd(sql: Pool, runTag: string): Promise<void> {
  const { rows } = await sql.query<{ ms: number }>(
    `SELECT greatest(0, ceil(extract(epoch FROM max(lease_expires_at) - clock_timestamp()) * 1000))::int AS ms
       FROM intents WHERE reference LIKE $1 AND settled_at IS NULL`,
    [`${runTag}-order-%`],
  );
  if (rows[0]?.ms) await new Promise((resolve) => setTimeout(resolve, rows[0].ms + 50));
}

/**
 * Every message ready in `queue`, read without consuming: got unacked on a channel of its own, then put
 * back (nack, requeue) in one go, so they are all in hand at once and none is read twice.
 */
async function takeAll(broker: ChannelModel, queue: string): Promise<Message[]> {
  const channel: Channel = await broker.createChannel();
  const taken: Message[] = [];
  try {
    for (let message = await channel.get(queue); message; message = await channel.get(queue)) {
      taken.push(message);
    }
    channel.nackAll(true);
  } finally {
    await channel.close().catch(() => undefined);
  }
  return taken;
}

function countBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(keyOf(item), (counts.get(keyOf(item)) ?? 0) + 1);
  return counts;
}

function shuffle<T>(items: T[]): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
