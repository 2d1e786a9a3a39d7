import type { Ledger } from '../ledger/ledger.js';
import { IntentInFlightError } from '../shared/errors/IntentInFlightError.js';
import { IntentNotExecutedError } from '../shared/errors/IntentNotExecutedError.js';
import { IntentOutcomeUnknownError } from '../shared/errors/IntentOutcomeUnknownError.js';
import { IntentRejectedError } from '../shared/errors/IntentRejectedError.js';
import type { RunResult } from '../shared/types.js';
import { charge } from './chargeClient.js';
import { seededRandom } from './random.js';

/** What the simulated consumers saw, by outcome of each delivery. */
export interface ConsumerTally {
  messages: number;
  deliveries: number;
  completed: number;
  replayed: number;
  rejected: number;
  notExecutedRequeued: number;
  inFlight: number;
  outcomeUnknown: number;
}

/**
 * A broker with at-least-once delivery, simulated: every order message is delivered one to three times,
 * shuffled, to a few concurrent consumers; a delivery that failed with "not executed" is requeued (as a
 * nack would). Each consumer charges through the ledger.
 */
export async function simulateConsumers(options: {
  ledger: Ledger;
  partnerApi: { url: string; token: string };
  partner: string;
  runTag: string;
  orders: number;
  consumers: number;
  seed: number;
}): Promise<ConsumerTally> {
  const random = seededRandom(options.seed);
  const queue: { order: number; requeues: number }[] = [];
  for (let order = 1; order <= options.orders; order++) {
    const copies = 1 + Math.floor(random() * 3);
    for (let copy = 0; copy < copies; copy++) queue.push({ order, requeues: 0 });
  }
  shuffle(queue, random);
  const tally: ConsumerTally = {
    messages: options.orders,
    deliveries: 0,
    completed: 0,
    replayed: 0,
    rejected: 0,
    notExecutedRequeued: 0,
    inFlight: 0,
    outcomeUnknown: 0,
  };

  const consume = async (): Promise<void> => {
    for (let message = queue.shift(); message; message = queue.shift()) {
      tally.deliveries++;
      const reference = `${options.runTag}-order-${message.order}`;
      const amount = `${10 + (message.order % 7)}.${String(message.order % 100).padStart(2, '0')}`;
      try {
        const result = await options.ledger.run(
          {
            partner: options.partner,
            operation: 'charge',
            key: `${reference}:charge`,
            payload: { reference, amount },
            reference,
            amount,
            currency: 'BRL',
          },
          ({ signal }) => charge(options.partnerApi, { reference, amount, currency: 'BRL' }, signal),
        );
        if (result.replayed) tally.replayed++;
        else tally.completed++;
      } catch (error) {
        if (error instanceof IntentRejectedError) tally.rejected++;
        else if (error instanceof IntentInFlightError) {
          tally.inFlight++;
          await new Promise((resolve) => setTimeout(resolve, 50));
          queue.push(message); // another consumer holds it: redeliver a little later
        } else if (error instanceof IntentNotExecutedError && message.requeues < 3) {
          tally.notExecutedRequeued++;
          queue.push({ ...message, requeues: message.requeues + 1 });
        } else if (error instanceof IntentOutcomeUnknownError) tally.outcomeUnknown++;
        else throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: options.consumers }, consume));
  return tally;
}

/** The order message's content: the same on every delivery, as a broker redelivers it. */
function orderMessage(runTag: string, order: number): { reference: string; amount: string; key: string } {
  const reference = `${runTag}-order-${order}`;
  return {
    reference,
    amount: `${10 + (order % 7)}.${String(order % 100).padStart(2, '0')}`,
    key: `${reference}:charge`,
  };
}

/** One delivery of order `order` to a consumer: charge through the ledger. */
export function deliver(
  options: { ledger: Ledger; partnerApi: { url: string; token: string }; partner: string; runTag: string },
  order: number,
): Promise<RunResult> {
  const { reference, amount, key } = orderMessage(options.runTag, order);
  return options.ledger.run(
    {
      partner: options.partner,
      operation: 'charge',
      key,
      payload: { reference, amount },
      reference,
      amount,
      currency: 'BRL',
    },
    ({ signal }) => charge(options.partnerApi, { reference, amount, currency: 'BRL' }, signal),
  );
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}
