import { join } from 'node:path';
import type { CrashWorkerEvent, CrashWorkerInput } from './crashWorker.js';
import { type EventWorker, startEventWorker } from './eventWorker.js';

/** A running crash worker (test/support/crashWorker.ts) in its own process. */
export type CrashWorker = EventWorker<CrashWorkerEvent>;

export function startCrashWorker(input: CrashWorkerInput): CrashWorker {
  return startEventWorker<CrashWorkerEvent>(join(__dirname, 'crashWorker.js'), input, {
    name: 'crash worker',
    defaultTimeoutMs: 10_000,
  });
}
