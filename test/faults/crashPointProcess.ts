import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { CrashPointEvent, CrashPointInput, CrashStep } from './crashPointWorker.js';

/** Header carrying the intent key to the fake partner, so its fault hook knows whose request it holds. */
export const CRASH_KEY_HEADER = 'x-crash-key';

type EventOf<N extends CrashPointEvent['event']> = Extract<CrashPointEvent, { event: N }>;

/** A running crash-point worker (test/faults/crashPointWorker.ts) in its own process. */
export interface CrashPointWorker {
  readonly child: ChildProcess;
  /** Every event printed so far. */
  readonly events: CrashPointEvent[];
  /** Resolves with the first event named `name`; rejects if the worker reports an error or exits first. */
  next<N extends CrashPointEvent['event']>(name: N, timeoutMs?: number): Promise<EventOf<N>>;
  /** Lets the worker go on past `step`. */
  go(step: CrashStep): void;
  /** SIGKILL now (synchronous: the signal is sent before this returns). */
  killNow(): void;
  /** SIGKILL (if still alive) and resolves with the signal that ended it, once it is gone. */
  kill(): Promise<NodeJS.Signals | null>;
}

export function startCrashPointWorker(input: CrashPointInput): CrashPointWorker {
  const child = spawn(process.execPath, [join(__dirname, 'crashPointWorker.js'), JSON.stringify(input)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  child.stdin?.on('error', () => undefined); // writing "go" to a worker just killed is not a failure
  const events: CrashPointEvent[] = [];
  const waiters: { name: string; resolve: (e: CrashPointEvent) => void; reject: (e: Error) => void }[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => {
    child.once('exit', (_code, signal) => {
      for (const waiter of waiters.splice(0))
        waiter.reject(new Error(`crash-point worker exited before "${waiter.name}"; stderr: ${stderr}`));
      resolve(signal);
    });
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const event = JSON.parse(line) as CrashPointEvent;
    events.push(event);
    for (const waiter of [...waiters]) {
      if (event.event === 'error') waiter.reject(new Error(`crash-point worker failed: ${event.message}`));
      else if (event.event === waiter.name) waiter.resolve(event);
      else continue;
      waiters.splice(waiters.indexOf(waiter), 1);
    }
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    events,
    next<N extends CrashPointEvent['event']>(name: N, timeoutMs = 20_000): Promise<EventOf<N>> {
      const seen = events.find((e) => e.event === name);
      if (seen) return Promise.resolve(seen as EventOf<N>);
      const failed = events.find((e) => e.event === 'error');
      if (failed) return Promise.reject(new Error(`crash-point worker failed: ${JSON.stringify(failed)}`));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`crash-point worker: no "${name}" within ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        );
        waiters.push({
          name,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e as EventOf<N>);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
      });
    },
    go(step) {
      if (alive()) child.stdin?.write(`go ${step}\n`);
    },
    killNow() {
      if (alive()) child.kill('SIGKILL');
    },
    async kill() {
      if (alive()) child.kill('SIGKILL');
      return exited;
    },
  };
}
