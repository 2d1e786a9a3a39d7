/**
 * A RabbitMQ consumer that charges a partner through the intent ledger: however often the broker
 * redelivers an order message (consumer crash, lost ack, a producer that published twice), the partner is
 * called at most once per order.
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
 *                     unknown may then be retried with the same key (see DESIGN.md, invariant 2)
 * - `PARTNER_TIMEOUT_MS` client timeout of the HTTP call (default 10000; keep it below the lease)
 * - `DATABASE_URL`    the ledger's PostgreSQL (default: the embedded one under .data/)
 * - `LEASE_MS`        the ledger's lease (default 30000)
 * - `RETRY_DELAY_MS`  pause before requeueing a message that is safe to retry (default 250)
 * - `CONSUMER_NAME`   recorded as the owner of each attempt (default `rabbitmq-consumer`), with the pid
 * - `LOG_LEVEL`       this consumer's log level (default `info`: one line per message; `debug` adds one
 *                     line when a message arrives); `LEDGER_LOG_LEVEL` the ledger's (default `warn`)
 *
 * SIGTERM / SIGINT: stop taking messages, finish (and ack or nack) the ones in hand, close the channel, the
 * connection and the ledger, exit 0.
 */
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
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

/** What the consumer did with one delivery. */
export interface Decision {
  action: 'ack' | 'requeue' | 'dead-letter';
  /** completed | replayed | rejected | outcome_unknown | late_completion | not_executed | in_flight | ... */
  outcome: string;
  /** How long to hold the message before requeueing it (so a redelivery does not spin). */
  delayMs?: number;
  attempt?: number;
  partnerReference?: string | null;
  detail?: string;
}

const MAX_IN_FLIGHT_WAIT_MS = 1_000;

/**
 * Decides ack or nack from the ledger's error. The rule: ack whatever is decided (or can only be decided by
 * reconciliation), requeue what a later delivery can still do safely.
 *
 * - completed / replayed / rejected: decided; a redelivery would only replay it. Ack.
 * - outcome unknown: the partner may have executed it. The ledger refuses to call again until the
 *   reconciler has settled the intent, so a redelivery can do nothing but fail the same way: ack, and let
 *   reconciliation (not the broker) settle it.
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
export function decide(error: unknown, retryDelayMs: number): Decision {
  if (error instanceof IntentRejectedError) {
    return { action: 'ack', outcome: 'rejected', detail: error.reason.message };
  }
  if (error instanceof IntentOutcomeUnknownError) {
    return { action: 'ack', outcome: 'outcome_unknown', attempt: error.attempt };
  }
  if (error instanceof LateCompletionError) {
    return { action: 'ack', outcome: 'late_completion', attempt: error.attempt };
  }
  if (error instanceof IntentNotExecutedError) {
    return { action: 'requeue', outcome: 'not_executed', attempt: error.attempt, delayMs: retryDelayMs };
  }
  if (error instanceof IntentInFlightError) {
    const untilLeaseEnds = error.leaseExpiresAt.getTime() - Date.now();
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
  owner: string;
}

function readConfig(env: NodeJS.ProcessEnv, argv: string[]): Config {
  const partnerUrl = env.PARTNER_URL;
  if (!partnerUrl)
    throw new Error('PARTNER_URL is required (the partner base URL, e.g. http://127.0.0.1:4010)');
  return {
    amqpUrl: env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    queue: argv[0] ?? env.QUEUE ?? 'orders',
    prefetch: positiveInteger(env.PREFETCH, 10, 'PREFETCH'),
    partnerUrl: partnerUrl.replace(/\/+$/, ''),
    partnerToken: env.PARTNER_TOKEN || undefined,
    partnerName: env.PARTNER_NAME ?? 'acme-pay',
    partnerHonoursKey: env.PARTNER_HONOURS_KEY === '1' || env.PARTNER_HONOURS_KEY === 'true',
    partnerTimeoutMs: positiveInteger(env.PARTNER_TIMEOUT_MS, 10_000, 'PARTNER_TIMEOUT_MS'),
    leaseMs: positiveInteger(env.LEASE_MS, 30_000, 'LEASE_MS'),
    retryDelayMs: positiveInteger(env.RETRY_DELAY_MS, 250, 'RETRY_DELAY_MS'),
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
  const channel: Channel = await connection.createChannel();
  let stopping = false;
  // The broker or the network went away: in-hand messages will be redelivered elsewhere, and the ledger
  // keeps that safe. Exit non-zero so a supervisor restarts us.
  connection.on('error', (error: Error) =>
    log.error({ event: 'connection-error', err: error.message }, 'broker connection error'),
  );
  connection.on('close', () => {
    if (stopping) return;
    log.error({ event: 'connection-lost' }, 'broker connection closed unexpectedly; exiting');
    void ledger.close().finally(() => process.exit(2));
  });
  channel.on('error', (error: Error) =>
    log.error({ event: 'channel-error', err: error.message }, 'channel error'),
  );

  await channel.assertQueue(config.queue, { durable: true });
  await channel.prefetch(config.prefetch);

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
    if (decision.action === 'requeue' && decision.delayMs) await pause(decision.delayMs, stopWaiting.signal);
    if (decision.action === 'ack') channel.ack(message);
    else channel.nack(message, false, decision.action === 'requeue');
    const level = decision.action === 'dead-letter' ? 'error' : 'info';
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
        detail: decision.detail,
        ms: Date.now() - started,
      },
      `${key ?? 'invalid message'}: ${decision.outcome} -> ${decision.action}`,
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
      prefetch: config.prefetch,
      owner: config.owner,
      amqp: redactUrl(config.amqpUrl),
      partnerHonoursKey: config.partnerHonoursKey,
    },
    `consuming ${config.queue} (prefetch ${config.prefetch})`,
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
    await Promise.allSettled([...inHand]);
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
