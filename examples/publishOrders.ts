/**
 * Publishes order messages for examples/rabbitmqConsumer.ts to try it by hand:
 *
 *   node dist/examples/publishOrders.js orders 100        # 100 orders on queue "orders"
 *   DUPLICATES=20 node dist/examples/publishOrders.js orders 100   # and 20 of them published twice
 *
 * `AMQP_URL` as for the consumer (default `amqp://guest:guest@127.0.0.1:5672`). Order ids are
 * `order-<run>-<n>`, so two runs never collide; publishing the same order twice is what a producer that
 * retried would do, and the consumer charges it once. The message id is the order id.
 */
import amqp from 'amqplib';

async function main(): Promise<void> {
  const queue = process.argv[2] ?? process.env.QUEUE ?? 'orders';
  const count = Number(process.argv[3] ?? 10);
  const duplicates = Number(process.env.DUPLICATES ?? 0);
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`count must be a positive integer, got ${process.argv[3]}`);
  const run = Date.now().toString(36);
  const connection = await amqp.connect(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  try {
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true });
    const orders = Array.from({ length: count }, (_, i) => ({
      orderId: `order-${run}-${i + 1}`,
      amount: `${10 + (i % 90)}.${String(i % 100).padStart(2, '0')}`,
      currency: 'BRL',
    }));
    const messages = [...orders, ...orders.slice(0, Math.min(duplicates, count))];
    for (const message of messages) {
      channel.sendToQueue(queue, Buffer.from(JSON.stringify(message)), {
        persistent: true,
        contentType: 'application/json',
        // Stable across the producer's retries, like the order id; kept when the consumer parks the message.
        messageId: message.orderId,
      });
    }
    await channel.waitForConfirms();
    console.log(`published ${messages.length} messages (${count} orders, run ${run}) to ${queue}`);
    await channel.close();
  } finally {
    await connection.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`publish-orders: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
