import { join } from 'node:path';
import { type EventWorker, startEventWorker } from '../support/eventWorker.js';
import type { CrashPointEvent, CrashPointInput, CrashStep } from './crashPointWorker.js';

/** Header carrying the intent key to the fake partner, so its fault hook knows whose request it holds. */
export const CRASH_KEY_HEADER = 'x-crash-key';

/** A running crash-point worker (test/faults/crashPointWorker.ts) in its own process. */
export interface CrashPointWorker extends EventWorker<CrashPointEvent> {
  /** Lets the worker go on past `step`. */
  go(step: CrashStep): void;
}

export function startCrashPointWorker(input: CrashPointInput): CrashPointWorker {
  const worker = startEventWorker<CrashPointEvent>(join(__dirname, 'crashPointWorker.js'), input, {
    name: 'crash-point worker',
    stdin: true,
    defaultTimeoutMs: 20_000,
  });
  return Object.assign(worker, {
    go(step: CrashStep) {
      if (worker.alive()) worker.child.stdin?.write(`go ${step}\n`);
    },
  });
}
