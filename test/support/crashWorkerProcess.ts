import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { CrashWorkerEvent, CrashWorkerInput } from './crashWorker.js';

/** A running crash worker (test/support/crashWorker.ts) in its own process. */
export interface CrashWorker {
  readonly child: ChildProcess;
  /** Resolves with the first event named `name`; rejects if the worker reports an error or exits first. */
  next(name: CrashWorkerEvent['event'], timeoutMs?: number): Promise<CrashWorkerEvent>;
  /** Kills the worker with SIGKILL (no cleanup of any kind runs) and resolves once it is gone. */
  kill(): Promise<NodeJS.Signals | null>;
  /** Every event printed so far. */
  readonly events: CrashWorkerEvent[];
}

export function startCrashWorker(input: CrashWorkerInput): CrashWorker {
  const child = spawn(process.execPath, [join(__dirname, 'crashWorker.js'), JSON.stringify(input)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  const events: CrashWorkerEvent[] = [];
  const waiters: { name: string; resolve: (e: CrashWorkerEvent) => void; reject: (e: Error) => void }[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => {
    child.once('exit', (_code, signal) => {
      for (const waiter of waiters.splice(0))
        waiter.reject(new Error(`crash worker exited before "${waiter.name}"; stderr: ${stderr}`));
      resolve(signal);
    });
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const event = JSON.parse(line) as CrashWorkerEvent;
    events.push(event);
    for (const waiter of [...waiters]) {
      if (event.event === 'error')
        waiter.reject(new Error(`crash worker failed: ${(event as { message: string }).message}`));
      else if (event.event === waiter.name) waiter.resolve(event);
      else continue;
      waiters.splice(waiters.indexOf(waiter), 1);
    }
  });
  return {
    child,
    events,
    next(name, timeoutMs = 10_000) {
      const seen = events.find((e) => e.event === name);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`crash worker: no "${name}" within ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        );
        waiters.push({
          name,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
      });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}
