/**
 * Broker redelivery: the example consumer (examples/rabbitmqConsumer.ts) reads order messages from a real
 * RabbitMQ, in child processes that are SIGKILLed mid-stream and restarted beside a second consumer, and
 * charges a real loopback HTTP partner through the ledger. Whatever the broker redelivers, and whatever the
 * producers published twice, the partner executes each order at most once.
 *
 * Runs wherever RabbitMQ answers at AMQP_URL (default amqp://guest:guest@127.0.0.1:5672); says so and
 * skips otherwise.
 */
import amqp, { type ChannelModel } from 'amqplib';
import { expect } from 'chai';
import type { Pool } from 'pg';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type ConsumerProcess, startConsumer } from './consumerProcess.js';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const ORDERS = 300;
const PUBLISHED_TWICE = 60;
const PREFETCH = 10;
const CONSUMER_LEASE_MS = 2_000;
/** Every Nth charge request is answered 429 (not executed): those orders need a second attempt. */
const RATE_LIMIT_EVERY = 37;
/** The partner answers each charge this late (it has executed already), so kills land mid-call. */
const PARTNER_LATENCY_MS = 20;
const ACKS_BEFORE_KILL = 50;

const OUTCOMES_ACKED = new Set(['completed', 'replayed', 'rejected', 'outcome_unknown']);
const OUTCOMES_REQUEUED = new Set(['not_executed', 'in_flight']);

describe('faults: broker redelivery (RabbitMQ, consumer processes killed mid-stream)', function () {
  this.timeout(120_000);
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

  async function runScenario({ label, honoursKey }: Scenario) {
    const started = Date.now();
    const runTag = `${label}-${process.pid}-${Date.now().toString(36)}`;
    const queue = `intent-ledger-faults-${runTag}`;
    queues.push(queue);
    const fake: FakePartner = await startFakePartner({ honoursKey });
    let chargeRequests = 0;
    fake.setFault((request) => {
      if (request.method !== 'POST') return undefined;
      chargeRequests++;
      if (chargeRequests % RATE_LIMIT_EVERY === 0) return { kind: 'status', status: 429, retryAfter: 0 };
      return { kind: 'delay', ms: PARTNER_LATENCY_MS };
    });
    try {
      // Publish: every order once, 60 of them a second time (a producer that retried), shuffled.
      const orders = Array.from({ length: ORDERS }, (_, i) => ({
        orderId: `${runTag}-order-${i + 1}`,
        amount: `${10 + (i % 90)}.${String(i % 100).padStart(2, '0')}`,
        currency: 'BRL',
      }));
      const messages = [...orders, ...orders.filter((_, i) => i % (ORDERS / PUBLISHED_TWICE) === 0)];
      shuffle(messages);
      const publisher = await (broker as ChannelModel).createConfirmChannel();
      await publisher.assertQueue(queue, { durable: true });
      for (const message of messages) {
        publisher.sendToQueue(queue, Buffer.from(JSON.stringify(message)), {
          persistent: true,
          contentType: 'application/json',
        });
      }
      await publisher.waitForConfirms();
      expect((await publisher.checkQueue(queue)).messageCount).to.equal(messages.length);

      const env = {
        AMQP_URL,
        QUEUE: queue,
        PREFETCH: String(PREFETCH),
        PARTNER_URL: fake.url,
        PARTNER_HONOURS_KEY: honoursKey ? '1' : '0',
        PARTNER_TIMEOUT_MS: '1000',
        DATABASE_URL: db.url,
        LEASE_MS: String(CONSUMER_LEASE_MS),
        RETRY_DELAY_MS: '50',
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

      // 1. One consumer; SIGKILL it mid-stream.
      const first = spawnConsumer('A1');
      await killMidStream(first, ACKS_BEFORE_KILL);
      // 2. Restart it, with a second consumer beside it; SIGKILL the restarted one mid-stream too.
      const second = spawnConsumer('A2');
      const other = spawnConsumer('B');
      await killMidStream(second, ACKS_BEFORE_KILL);
      // 3. Restart it again, and let both drain the queue.
      const third = spawnConsumer('A3');
      const live = [other, third];
      await Promise.all(live.map((c) => c.waitFor('ready', () => c.lines.some((l) => l.event === 'ready'))));
      await waitUntilDrained(publisher, queue, live);

      // 4. SIGTERM: each finishes what it holds, closes channel, connection and ledger, and exits 0.
      const ends = await Promise.all(live.map((c) => c.stop('SIGTERM')));
      for (const [i, end] of ends.entries()) {
        expect(end, `${live[i].name} exit; stderr: ${live[i].stderr()}`).to.deep.equal({
          code: 0,
          signal: null,
        });
        expect(live[i].lines.some((l) => l.event === 'stopped')).to.equal(true);
      }
      await publisher.close();

      // What the consumers did with each delivery.
      const all = [first, second, other, third];
      const lines = all.flatMap((c) => c.lines.filter((l) => l.event === 'message'));
      const byOutcome = countBy(lines, (l) => `${l.outcome} -> ${l.action}`);
      for (const line of lines) {
        if (line.action === 'ack') expect(OUTCOMES_ACKED, JSON.stringify(line)).to.include(line.outcome);
        else {
          expect(line.action, JSON.stringify(line)).to.equal('requeue');
          expect(OUTCOMES_REQUEUED, JSON.stringify(line)).to.include(line.outcome);
        }
      }
      // The key is the business key, never the delivery tag: every line of an order has the same key.
      for (const line of lines) expect(line.key).to.equal(`${line.orderId}:charge`);

      // The partner's record and the ledger's.
      const executionsByOrder = countBy(fake.executions, (e) => e.reference);
      const { rows: intents } = await sql.query<{
        reference: string;
        status: string;
        attempt: number;
        partner_reference: string | null;
        lease_running: boolean;
        last_owner: string | null;
        last_outcome: string | null;
      }>(
        `SELECT i.reference, i.status, i.attempt, i.partner_reference, coalesce(i.lease_expires_at > now(), false) AS lease_running,
                a.owner AS last_owner, a.outcome AS last_outcome
           FROM intents i JOIN intent_attempts a ON a.intent_id = i.id AND a.attempt = i.attempt
          WHERE i.reference LIKE $1`,
        [`${runTag}-order-%`],
      );
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
      // What is not completed was in the hands of a killed consumer: it waits for reconciliation.
      const stuck = intents.filter((i) => i.status !== 'completed');
      for (const intent of stuck) {
        expect(['in_progress', 'unknown'], JSON.stringify(intent)).to.include(intent.status);
        expect(intent.lease_running, JSON.stringify(intent)).to.equal(false);
        expect(killedOwners, JSON.stringify(intent)).to.include(intent.last_owner);
        expect(intent.last_outcome, JSON.stringify(intent)).to.equal(null);
      }
      expect(stuck.length).to.be.at.most(kills.length * PREFETCH);
      const stuckExecuted = stuck.filter((i) => executionsByOrder.has(i.reference)).length;
      expect(fake.executions.length).to.equal(completed.length + stuckExecuted);
      if (honoursKey) {
        // The partner deduplicates by our key: a dead consumer's attempt is retried with the same key once
        // its lease ends, so every order ends completed and executed exactly once.
        expect(stuck).to.deep.equal([]);
        expect(executionsByOrder.size).to.equal(ORDERS);
      }

      const figures = {
        scenario: label,
        messagesPublished: messages.length,
        distinctOrders: ORDERS,
        publishedTwice: messages.length - ORDERS,
        deliveriesHandled: lines.length,
        redeliveriesSeen: lines.filter((l) => l.redelivered).length,
        kills: kills.map((k) => `${k.name} after ${k.acks} acks, ${k.inHand} in hand`),
        byOutcome: Object.fromEntries(byOutcome),
        chargeRequests,
        partnerExecutions: fake.executions.length,
        ordersExecutedTwice: [...executionsByOrder.values()].filter((n) => n > 1).length,
        completed: completed.length,
        secondAttempts: intents.filter((i) => i.attempt > 1).length,
        awaitingReconciliation: stuck.length,
        awaitingReconciliationExecuted: stuckExecuted,
        seconds: (Date.now() - started) / 1000,
      };
      console.log(`      figures: ${JSON.stringify(figures)}`);
    } finally {
      await fake.close();
    }
  }

  it('partner without deduplication: no order executed twice; all completed but the killed consumers\u2019 in-hand calls, which wait for reconciliation', async () => {
    await runScenario({ label: 'nodedup', honoursKey: false });
  });

  it('partner honouring Idempotency-Key: every order executed exactly once and every intent completed', async () => {
    await runScenario({ label: 'dedup', honoursKey: true });
  });
});

/** Drained: nothing ready in the queue, nothing in any consumer's hands, and no line for a moment. */
async function waitUntilDrained(
  channel: { checkQueue(queue: string): Promise<{ messageCount: number }> },
  queue: string,
  consumers: ConsumerProcess[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietChecks = 0;
  while (quietChecks < 3) {
    if (Date.now() > deadline) throw new Error(`queue ${queue} not drained within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (const consumer of consumers) {
      if (!consumer.alive()) throw new Error(`${consumer.name} died: ${consumer.stderr()}`);
    }
    const { messageCount } = await channel.checkQueue(queue);
    const idle = consumers.every((c) => c.inHand() === 0 && Date.now() - c.lastLineAt() > 300);
    quietChecks = messageCount === 0 && idle ? quietChecks + 1 : 0;
  }
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
