/**
 * Deliveries that mix new keys and duplicates, the workload between the write path's (every key new) and the
 * replay's (every key settled), measured for the three claim orders side by side (src/ledger/claimOrder.ts):
 * `adaptive` (the default) must never cost much more than the better of the two fixed orders at any share of
 * duplicates, since it picks one of them from what its recent claims found. Concurrency 32, interleaved
 * rounds as the other comparisons; a duplicate is a delivery of a key settled before the measurement.
 */
import type { ClaimOrderMode } from '../src/ledger/claimOrder.js';
import type { Ledger } from '../src/ledger/ledger.js';
import { compareVariants, cpuRatio, log, type Meter, round, type VariantFigures } from './support.js';

export interface MixedFigures {
  /** Share of deliveries that are duplicates of a settled key. */
  duplicateShare: number;
  adaptive: VariantFigures;
  insertFirst: VariantFigures;
  readFirst: VariantFigures;
  /** adaptive ops/s ÷ the better fixed order's ops/s. */
  adaptiveVsBest: number;
  /** CPU per delivery of the better fixed order ÷ adaptive's (as cpuRatio elsewhere). */
  adaptiveCpuVsBest: number | null;
}

const ORDERS: readonly ClaimOrderMode[] = ['adaptive', 'insert-first', 'read-first'];

export async function benchMixedDeliveries(
  meter: Meter,
  input: {
    /** A ledger on the benchmark's database with this claim order. */
    open: (claimOrder: ClaimOrderMode) => Promise<Ledger>;
    /** One delivery of `key` through `ledger`; resolves to whether it was a replay. */
    deliver: (ledger: Ledger, key: string) => Promise<boolean>;
    /** Keys already completed, to deliver again. */
    settledKeys: readonly string[];
    shares: readonly number[];
    timing: { rounds: number; slotMs: number; warmupMs: number };
  },
): Promise<MixedFigures[]> {
  const ledgers = new Map<ClaimOrderMode, Ledger>();
  try {
    for (const claimOrder of ORDERS) ledgers.set(claimOrder, await input.open(claimOrder));
    const results: MixedFigures[] = [];
    for (const share of input.shares) {
      // Deliveries in blocks of 20: the first `duplicates` of each block are duplicates, spread evenly enough
      // that any 64 consecutive claims (the claim order's memory) see about the share.
      const duplicates = Math.round(share * 20);
      const variants = ORDERS.map((claimOrder) => ({
        name: claimOrder,
        op: (slot: number) => async (n: number) => {
          const ledger = ledgers.get(claimOrder)!;
          if (n % 20 < duplicates) {
            const key = input.settledKeys[(slot * 7919 + n) % input.settledKeys.length];
            if (!(await input.deliver(ledger, key)))
              throw new Error(`duplicate of ${key} called the partner`);
          } else {
            const key = `mix-${claimOrder}-${share}-${slot}-${n}`;
            if (await input.deliver(ledger, key)) throw new Error(`new key ${key} was replayed`);
          }
        },
      }));
      const measured = await compareVariants(meter, variants, { concurrency: 32, ...input.timing });
      const adaptive = measured.get('adaptive')!;
      const insertFirst = measured.get('insert-first')!;
      const readFirst = measured.get('read-first')!;
      const best = insertFirst.opsPerSecond >= readFirst.opsPerSecond ? insertFirst : readFirst;
      const entry: MixedFigures = {
        duplicateShare: share,
        adaptive,
        insertFirst,
        readFirst,
        adaptiveVsBest: round(adaptive.opsPerSecond / best.opsPerSecond, 3),
        adaptiveCpuVsBest: cpuRatio(best, adaptive),
      };
      results.push(entry);
      log(
        `mixed deliveries c=32, ${Math.round(share * 100)}% duplicates: ops/s adaptive ${adaptive.opsPerSecond}, ` +
          `insert-first ${insertFirst.opsPerSecond}, read-first ${readFirst.opsPerSecond}; adaptive ÷ the ` +
          `better ${entry.adaptiveVsBest} (CPU ${entry.adaptiveCpuVsBest})`,
      );
    }
    return results;
  } finally {
    await Promise.all([...ledgers.values()].map((ledger) => ledger.close()));
  }
}
