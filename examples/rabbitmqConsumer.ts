/**
 * A RabbitMQ consumer that charges a partner through the intent ledger: however often the broker
 * redelivers an order message (consumer crash, lost ack, a producer that published twice), the partner is
 * called at most once per order.
 *
 * A message whose call ended with its outcome unknown is parked, never dropped: it is published again,
 * unchanged (body, message id, headers, plus `x-park-count`), to `<QUEUE>.parked`, a durable queue nobody
 * consumes that dead-letters expired messages back to `<QUEUE>`; each parked copy expires after
 * `PARK_DELAY_MS`. The original is acked only once the broker has confirmed the parked copy. When it comes
 * back, the reconciler has (usually) settled the intent: completed (the ledger replays it, ack), not_executed
 * (the ledger claims attempt + 1 and charges it, ack) or still unknown (parked again).
 *
 *   npm run build
 *   PARTNER_URL=http://127.0.0.1:4010 DATABASE_URL=postgres://... node dist/examples/rabbitmqConsumer.js orders
 *
 * Messages are JSON `{ "orderId": "order-1", "amount": "10.50", "currency": "BRL" }`.
 *
 * Environment:
 * - `AMQP_URL`        broker (default `amqp://guest:guest@127.0.0.1:5672`)
 * - `QUEUE`           queue to consume (or the first argument; default `orders`)
 * - `PREFETCH`        messages handled at once (default 10)
 * - `PARTNER_URL`     the partner's base URL (required); charges are `POST {PARTNER_URL}/v1/charges`
 * - `PARTNER_TOKEN`   bearer token for the partner, if it wants one
 * - `PARTNER_NAME`    the partner's name in the ledger (default `acme-pay`)
 * - `PARTNER_HONOURS_KEY=1` the partner deduplicates by `Idempotency-Key`: an attempt whose outcome is
 *                     unknown may then be retried with the same key (see docs/DESIGN.md, invariant 2)
 * - `PARTNER_TIMEOUT_MS` client timeout of the HTTP call (default 10000; keep it below the lease)
 * - `DATABASE_URL`    the ledger's PostgreSQL (required: without it createLedger throws
 *                     DatabaseNotConfiguredError; the library never opens an embedded server on its own)
 * - `LEASE_MS`        the ledger's lease (default 30000)
 * - `RETRY_DELAY_MS`  pause before requeueing a message that is safe to retry (default 250)
 * - `PARK_DELAY_MS`   how long a message whose outcome is unknown stays parked before it comes back
 *                     (default 900000, 15 minutes). Reconciliation runs on a schedule (every 15 minutes in
 *                     the shipped reconcilers) and settles an intent only once it has been stuck for
 *                     `stuckAfter` (default 15m) and, to prove it not executed, once a report covers its
 *                     start plus the settlement lag (default 2h). Coming back sooner than a run can have
 *                     settled it only parks the message again (a ledger read and a publish each time);
 *                     coming back much later delays the charge of an order proven not executed. Keep it
 *                     the same for every consumer of a queue: the broker expires messages only at the head
 *                     of the parked queue, so a copy with a longer delay holds back the ones behind it.
 * - `CONSUMER_NAME`   recorded as the owner of each attempt (default `rabbitmq-consumer`), with the pid
 * - `LOG_LEVEL`       this consumer's log level (default `info`: one line per message; `debug` adds one
 *                     line when a message arrives); `LEDGER_LOG_LEVEL` the ledger's (default `warn`)
 *
 * SIGTERM / SIGINT: stop taking messages, finish (ack, park or nack) the ones in hand, close the channels,
 * the connection and the ledger, exit 0. The connection or a channel closed by the broker: exit 2 (a
 * supervisor restarts it; the broker redelivers what was in hand).
 */
import amqp, {
  type Channel,
  type ChannelModel,
  type ConfirmChannel,
  type ConsumeMessage,
  type Options,
} from 'amqplib';
import axios from 'axios';
import pino from 'pino';
import {
  type CallResult,
  createLedger,
  IdempotencyKeyConflictError,
  IntentInFlightError,
  IntentNotExecutedError,
  IntentOutcomeUnknownError,
  IntentRejectedError,
  LateCompletionError,
  type Ledger,
  LedgerError,
  LedgerUnavailableError,
} from '../src/index.js';

/** The order message a producer publishes. */
export interface OrderMessage {
  orderId: string;
  /** Decimal string, e.g. `"10.50"`; never a JSON number. */
  amount: string;
  /** ISO 4217, e.g. `"BRL"`. */
  currency: string;
}

/** What the consumer does with one delivery. */
export interface Decision {
  /** `park`: publish a copy to the parking queue, then ack the original (see {@link decide}). */
  action: 'ack' | 'park' | 'requeue' | 'dead-letter';
  /** completed | replayed | rejected | outcome_unknown | late_completion | not_executed | in_flight | ... */
  outcome: string;
  /** How long to hold the message before requeueing it (so a redelivery does not spin). */
  delayMs?: number;
  attempt?: number;
  partnerReference?: string | null;
  detail?: string;
}

const MAX_IN_FLIGHT_WAIT_MS = 1_000;

/** Header of a parked copy: how many times the message has been parked, 1 the first time. */
export const PARK_COUNT_HEADER = 'x-park-count';

/**
 * How long to wait for the broker to confirm a parked copy. Past it the original is requeued instead: if the
 * confirm was only slow, the order then exists twice, which the ledger absorbs; acking it unconfirmed could
 * lose it.
 */
const PARK_CONFIRM_TIMEOUT_MS = 10_000;

/**
 * Decides what to do with a delivery from the ledger's error. Pure: the same error, delay and `now` (by
 * default the clock; it times an in-flight wait) give the same decision, and it touches neither broker nor
 * ledger; the handler carries it out. The rule: ack whatever is decided, park what only reconciliation can
 * decide, requeue what a later delivery can still do safely.
 *
 * - completed / replayed / rejected: decided; a redelivery would only replay it. Ack.
 * - outcome unknown, whether this call's answer was lost or a redelivery finds the intent still unknown
 *   (or in progress with its lease ended): the partner may have executed it, and the ledger refuses to call
 *   again until the reconciler has settled the intent. Requeueing would spin, acking would lose the order
 *   if the reconciler proves it not executed. Park: a copy waits in the parking queue and comes back once
 *   reconciliation has had time to settle it (then it is replayed, or charged as the next attempt).
 * - late completion: the answer is recorded and raised as a discrepancy for finance. Ack.
 * - not executed (connection refused, 429): recorded as `not_executed`, so the next delivery claims a new
 *   attempt. Requeue, after a short pause so a rate-limited partner is not hammered.
 * - in flight: another consumer (or a dead one whose lease has not ended) holds the attempt. Requeue, after
 *   waiting for the lease (capped), so the redelivery finds the intent completed, or unknown once a dead
 *   consumer's lease has ended; an immediate requeue would spin through the broker for the whole lease.
 * - ledger unavailable: the database failed. Before the claim nothing happened; while recording an outcome
 *   the intent stays in progress and its lease decides. Either way a later delivery is safe. Requeue.
 * - key conflict, invalid message: no redelivery can succeed. Dead-letter (nack without requeue).
 */
export function decide(error: unknown, retryDelayMs: number, now: number = Date.now()): Decision {
  if (error instanceof IntentRejectedError) {
    return { action: 'ack', outcome: 'rejected', detail: error.reason.message };
  }
  if (error instanceof IntentOutcomeUnknownError) {
    return { action: 'park', outcome: 'outcome_unknown', attempt: error.attempt };
  }
  if (error instanceof LateCompletionError) {
    return { action: 'ack', outcome: 'late_completion', attempt: error.attempt };
  }
  if (error instanceof IntentNotExecutedError) {
    return { action: 'requeue', outcome: 'not_executed', attempt: error.attempt, delayMs: retryDelayMs };
  }
  if (error instanceof IntentInFlightError) {
    const untilLeaseEnds = error.leaseExpiresAt.getTime() - now;
    return {
      action: 'requeue',
      outcome: 'in_flight',
      delayMs: Math.min(MAX_IN_FLIGHT_WAIT_MS, Math.max(retryDelayMs, untilLeaseEnds)),
    };
  }
  if (error instanceof LedgerUnavailableError) {
    return { action: 'requeue', outcome: 'ledger_unavailable', delayMs: retryDelayMs, detail: error.message };
  }
  if (error instanceof IdempotencyKeyConflictError) {
    return { action: 'dead-letter', outcome: 'key_conflict', detail: error.message };
  }
  if (error instanceof LedgerError)
    return { action: 'dead-letter', outcome: error.code, detail: error.message };
  return {
    action: 'dead-letter',
    outcome: 'invalid',
    detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  };
}

/** Reads and checks a message body; throws a TypeError naming what is wrong. */
export function parseOrder(content: Buffer): OrderMessage {
  const value: unknown = JSON.parse(content.toString('utf8'));
  if (typeof value !== 'object' || value === null) throw new TypeError('message is not a JSON object');
  const { orderId, amount, currency } = value as Record<string, unknown>;
  if (typeof orderId !== 'string' || orderId === '')
    throw new TypeError('orderId must be a non-empty string');
  if (typeof amount !== 'string') throw new TypeError('amount must be a decimal string');
  if (typeof currency !== 'string') throw new TypeError('currency must be a string');
  return { orderId, amount, currency };
}

interface Config {
  amqpUrl: string;
  queue: string;
  prefetch: number;
  partnerUrl: string;
  partnerToken?: string;
  partnerName: string;
  partnerHonoursKey: boolean;
  partnerTimeoutMs: number;
  leaseMs: number;
  retryDelayMs: number;
  /** `${queue}.parked`: where messages whose outcome is unknown wait for reconciliation. */
  parkQueue: string;
  parkDelayMs: number;
  owner: string;
}

function readConfig(env: NodeJS.ProcessEnv, argv: string[]): Config {
  const partnerUrl = env.PARTNER_URL;
  if (!partnerUrl)
    throw new Error('PARTNER_URL is required (the partner base URL, e.g. http://127.0.0.1:4010)');
  const queue = argv[0] ?? env.QUEUE ?? 'orders';
  return {
    amqpUrl: env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    queue,
    prefetch: positiveInteger(env.PREFETCH, 10, 'PREFETCH'),
    partnerUrl: partnerUrl.replace(/\/+$/, ''),
    partnerToken: env.PARTNER_TOKEN || undefined,
    partnerName: env.PARTNER_NAME ?? 'acme-pay',
    partnerHonoursKey: env.PARTNER_HONOURS_KEY === '1' || env.PARTNER_HONOURS_KEY === 'true',
    partnerTimeoutMs: positiveInteger(env.PARTNER_TIMEOUT_MS, 10_000, 'PARTNER_TIMEOUT_MS'),
    leaseMs: positiveInteger(env.LEASE_MS, 30_000, 'LEASE_MS'),
    retryDelayMs: positiveInteger(env.RETRY_DELAY_MS, 250, 'RETRY_DELAY_MS'),
    parkQueue: `${queue}.parked`,
    parkDelayMs: positiveInteger(env.PARK_DELAY_MS, 15 * 60_000, 'PARK_DELAY_MS'),
    owner: `${env.CONSUMER_NAME ?? 'rabbitmq-consumer'}:${process.pid}`,
  };
}

function positiveInteger(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new Error(`${name} must be a positive integer, got ${value}`);
  return parsed;
}

/** The URL without its password, for logs. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** The partner call, written as it would be without the ledger; the ledger's signal is passed through. */
async function chargeOrder(
  config: Config,
  order: OrderMessage,
  key: string,
  signal: AbortSignal,
): Promise<CallResult> {
  const headers: Record<string, string> = { 'idempotency-key': key };
  if (config.partnerToken) headers.authorization = `Bearer ${config.partnerToken}`;
  const response = await axios.post<unknown>(
    `${config.partnerUrl}/v1/charges`,
    { reference: order.orderId, amount: order.amount, currency: order.currency },
    { signal, timeout: config.partnerTimeoutMs, headers },
  );
  const id = (response.data as { id?: unknown } | null)?.id;
  // An answer we cannot read is not a success we can record: the callback throws, the ledger says unknown.
  if (typeof id !== 'string') throw new Error(`unreadable partner answer (HTTP ${response.status})`);
  return { partnerReference: id, response: { id } };
}

/** How many times `message` was parked before (0 for a message that never was). */
export function parkCountOf(message: { properties: { headers?: Record<string, unknown> } }): number {
  const count = Number(message.properties.headers?.[PARK_COUNT_HEADER] ?? 0);
  return Number.isInteger(count) && count > 0 ? count : 0;
}

/**
 * The parked copy's publish options: the message as it came (message id, correlation id, headers, content
 * type...) plus its park count, persistent, expiring after `delayMs`. Not `userId`: the broker checks it
 * against the publishing connection's user, which need not be the producer's. `mandatory`: a copy the broker
 * cannot route (the parking queue was deleted) comes back as a basic.return instead of vanishing.
 */
export function parkedCopyOptions(
  message: { properties: ConsumeMessage['properties'] },
  parks: number,
  delayMs: number,
): Options.Publish {
  const p = message.properties;
  return {
    contentType: p.contentType,
    contentEncoding: p.contentEncoding,
    headers: { ...p.headers, [PARK_COUNT_HEADER]: parks },
    priority: p.priority,
    correlationId: p.correlationId,
    replyTo: p.replyTo,
    messageId: p.messageId,
    timestamp: p.timestamp,
    type: p.type,
    appId: p.appId,
    expiration: String(delayMs),
    persistent: true,
    mandatory: true,
  };
}

/**
 * Publishes parked copies on a confirm channel; each call resolves once the broker has confirmed its copy
 * and rejects when it nacked it, the channel closed, no confirm came within PARK_CONFIRM_TIMEOUT_MS, or the
 * broker returned a copy as unroutable (the parking queue was deleted under us).
 *
 * A basic.return does not say which publish it answers, but RabbitMQ sends it before the basic.ack of the
 * same message. So the first return marks the channel unroutable for good: every confirm that arrives from
 * then on, the returned copy's included, counts as a failure (its original is requeued, never acked), and
 * `onUnroutable` is told, so the consumer can exit and declare the queue again when restarted. Parks stay
 * concurrent: a persistent copy is confirmed only once written to disk (tens to a couple of hundred ms),
 * and one park at a time would clog the prefetch window whenever many outcomes are unknown at once.
 */
function createParker(channel: ConfirmChannel, queue: string, delayMs: number, onUnroutable: () => void) {
  let unroutable = false;
  channel.on('return', () => {
    if (unroutable) return;
    unroutable = true;
    onUnroutable();
  });
  return (message: ConsumeMessage, parks: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no confirm from the broker within ${PARK_CONFIRM_TIMEOUT_MS} ms`)),
        PARK_CONFIRM_TIMEOUT_MS,
      );
      try {
        channel.sendToQueue(queue, message.content, parkedCopyOptions(message, parks, delayMs), (error) => {
          clearTimeout(timer);
          if (error) reject(error instanceof Error ? error : new Error(String(error)));
          else if (unroutable) reject(new Error(`the broker could not route copies to ${queue} (deleted?)`));
          else resolve();
        });
      } catch (error) {
        // The channel is closed: sendToQueue throws before registering the callback.
        clearTimeout(timer);
        reject(error);
      }
    });
}

async function main(): Promise<void> {
  const config = readConfig(process.env, process.argv.slice(2));
  const log = pino({ name: 'rabbitmq-consumer', level: process.env.LOG_LEVEL ?? 'info' });
  const ledger: Ledger = await createLedger({
    leaseMs: config.leaseMs,
    owner: config.owner,
    logger: log.child({ component: 'ledger' }, { level: process.env.LEDGER_LOG_LEVEL ?? 'warn' }),
  });

  let connection: ChannelModel;
  try {
    connection = await amqp.connect(config.amqpUrl);
  } catch (error) {
    await ledger.close();
    throw new Error(`RabbitMQ not reachable at ${redactUrl(config.amqpUrl)}: ${(error as Error).message}`);
  }
  // Listen for errors before the first declaration: amqplib rethrows an 'error' nobody listens to, and a
  // declaration the broker refuses closes the channel with one.
  connection.on('error', (error: Error) =>
    log.error({ event: 'connection-error', err: error.message }, 'broker connection error'),
  );
  const watch = <T extends Channel>(name: string, opened: T): T => {
    opened.on('error', (error: Error) =>
      log.error({ event: 'channel-error', channel: name, err: error.message }, `${name} error`),
    );
    return opened;
  };
  let channel: Channel;
  let parking: ConfirmChannel;
  try {
    channel = watch('consume channel', await connection.createChannel());
    await channel.assertQueue(config.queue, { durable: true });
    await channel.prefetch(config.prefetch);
    parking = watch('parking channel', await connection.createConfirmChannel());
    // Nobody consumes the parking queue: a copy waits there until its expiration, then the broker
    // dead-letters it through the default exchange back to the work queue.
    await parking
      .assertQueue(config.parkQueue, {
        durable: true,
        deadLetterExchange: '',
        deadLetterRoutingKey: config.queue,
      })
      .catch((error: Error) => {
        throw new Error(
          `cannot declare ${config.parkQueue} (durable, x-dead-letter-exchange '', x-dead-letter-routing-key ${config.queue}); if it exists with other arguments, delete or fix it: ${error.message}`,
        );
      });
  } catch (error) {
    await connection.close().catch(() => undefined);
    await ledger.close();
    throw error;
  }

  let stopping = false;
  let exiting = false;
  // The broker or the network went away, or the broker closed a channel (a channel error): in-hand
  // messages will be redelivered elsewhere, and the ledger keeps that safe. Exit non-zero so a supervisor
  // restarts us with fresh channels.
  const lost = (reason: string) => {
    if (stopping || exiting) return;
    exiting = true;
    log.error({ event: 'connection-lost', reason }, `${reason}; exiting`);
    void ledger.close().finally(() => process.exit(2));
  };
  connection.on('close', () => lost('broker connection closed unexpectedly'));
  channel.on('close', () => lost('consume channel closed unexpectedly'));
  parking.on('close', () => lost('parking channel closed unexpectedly'));
  const park = createParker(parking, config.parkQueue, config.parkDelayMs, () =>
    lost(`${config.parkQueue} is gone: the broker returned a parked copy as unroutable`),
  );

  const inHand = new Set<Promise<void>>();
  const stopWaiting = new AbortController();

  const handle = async (message: ConsumeMessage): Promise<void> => {
    const started = Date.now();
    const redelivered = message.fields.redelivered;
    log.debug(
      { event: 'received', deliveryTag: message.fields.deliveryTag, redelivered },
      'message received',
    );
    let order: OrderMessage | undefined;
    let key: string | undefined;
    let decision: Decision;
    try {
      order = parseOrder(message.content);
      // The business key, stable across redeliveries and duplicate publishes; never the delivery tag.
      key = `${order.orderId}:charge`;
      const current = order;
      const result = await ledger.run(
        {
          partner: config.partnerName,
          operation: 'charge',
          key,
          payload: current,
          reference: current.orderId,
          amount: current.amount,
          currency: current.currency,
          partnerHonoursKey: config.partnerHonoursKey,
        },
        ({ signal, key: intentKey }) => chargeOrder(config, current, intentKey, signal),
      );
      decision = {
        action: 'ack',
        outcome: result.replayed ? 'replayed' : 'completed',
        attempt: result.attempt,
        partnerReference: result.partnerReference,
      };
    } catch (error) {
      decision = decide(error, config.retryDelayMs);
    }
    let parks: number | undefined;
    let parkFailed = false;
    if (decision.action === 'park') {
      parks = parkCountOf(message) + 1;
      try {
        await park(message, parks);
      } catch (error) {
        // Not parked: never ack it. Requeue it, after a pause so a broken parking queue is not spun through;
        // the redelivery finds the intent unknown again and tries to park it again.
        decision = {
          ...decision,
          action: 'requeue',
          delayMs: config.retryDelayMs,
          detail: `could not park it: ${(error as Error).message}`,
        };
        parks = undefined;
        parkFailed = true;
      }
    }
    if (decision.action === 'requeue' && decision.delayMs) await pause(decision.delayMs, stopWaiting.signal);
    // A parked message is acked only now, after the broker confirmed its copy.
    if (decision.action === 'ack' || decision.action === 'park') channel.ack(message);
    else channel.nack(message, false, decision.action === 'requeue');
    const level = decision.action === 'dead-letter' ? 'error' : parkFailed ? 'warn' : 'info';
    const back = parks === undefined ? '' : ` (parked ${parks}x, back in ${config.parkDelayMs / 1000} s)`;
    log[level](
      {
        event: 'message',
        orderId: order?.orderId,
        key,
        redelivered,
        outcome: decision.outcome,
        action: decision.action,
        attempt: decision.attempt,
        partnerReference: decision.partnerReference ?? undefined,
        parks,
        detail: decision.detail,
        ms: Date.now() - started,
      },
      `${key ?? 'invalid message'}: ${decision.outcome} -> ${decision.action}${back}`,
    );
  };

  const { consumerTag } = await channel.consume(
    config.queue,
    (message) => {
      if (message === null) {
        log.warn({ event: 'cancelled' }, 'the broker cancelled the consumer');
        return;
      }
      const work = handle(message).catch((error: unknown) => {
        // Only a broken channel gets here (ack/nack threw); the broker will redeliver.
        log.error({ event: 'handler-failed', err: (error as Error).message }, 'could not settle a message');
      });
      inHand.add(work);
      void work.finally(() => inHand.delete(work));
    },
    { noAck: false },
  );
  log.info(
    {
      event: 'ready',
      queue: config.queue,
      parkQueue: config.parkQueue,
      parkDelayMs: config.parkDelayMs,
      prefetch: config.prefetch,
      owner: config.owner,
      amqp: redactUrl(config.amqpUrl),
      partnerHonoursKey: config.partnerHonoursKey,
    },
    `consuming ${config.queue} (prefetch ${config.prefetch}; outcomes unknown park in ${config.parkQueue})`,
  );

  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ event: 'stopping', signal, inHand: inHand.size }, `${signal}: finishing messages in hand`);
    try {
      await channel.cancel(consumerTag);
    } catch {
      // the channel is already gone: nothing more will arrive
    }
    stopWaiting.abort(); // requeue now what was waiting to be requeued
    // Parks in hand finish too: their copies are confirmed (or they are requeued) before the channels close.
    await Promise.allSettled([...inHand]);
    await parking.close().catch(() => undefined);
    await channel.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await ledger.close();
    log.info({ event: 'stopped' }, 'stopped cleanly');
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`rabbitmq-consumer: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
