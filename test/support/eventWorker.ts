import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** What a worker prints: one JSON object per line, named by `event`; `error` ends it as failed. */
export interface WorkerEvent {
  event: string;
}

/**
 * A test worker in its own Node process (`node <script> <input as JSON>`, logs silenced) that reports what it
 * does as JSON lines on stdout, so a test can wait for a step and SIGKILL it exactly there. Shared by the
 * crash worker (test/support/crashWorker.ts) and the crash-point worker (test/faults/crashPointWorker.ts).
 */
export interface EventWorker<E extends WorkerEvent> {
  readonly child: ChildProcess;
  /** Every event printed so far. */
  readonly events: E[];
  /** Resolves with the first event named `name`; rejects if the worker reports an error or exits first. */
  next<N extends E['event']>(name: N, timeoutMs?: number): Promise<Extract<E, { event: N }>>;
  /** Whether the process is still running. */
  alive(): boolean;
  /** SIGKILL now (synchronous: the signal is sent before this returns). */
  killNow(): void;
  /** SIGKILL (if still alive; no cleanup of any kind runs) and resolves with the signal that ended it. */
  kill(): Promise<NodeJS.Signals | null>;
}

export function startEventWorker<E extends WorkerEvent>(
  script: string,
  input: unknown,
  options: { name: string; stdin?: boolean; defaultTimeoutMs: number },
): EventWorker<E> {
  const { name: who } = options;
  const child = spawn(process.execPath, [script, JSON.stringify(input)], {
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  child.stdin?.on('error', () => undefined); // writing to a worker just killed is not a failure
  const events: E[] = [];
  const waiters: { name: string; resolve: (e: E) => void; reject: (e: Error) => void }[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => {
    child.once('exit', (_code, signal) => {
      for (const waiter of waiters.splice(0))
        waiter.reject(new Error(`${who} exited before "${waiter.name}"; stderr: ${stderr}`));
      resolve(signal);
    });
  });
  const failure = (event: E) => new Error(`${who} failed: ${(event as { message?: string }).message}`);
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const event = JSON.parse(line) as E;
    events.push(event);
    for (const waiter of [...waiters]) {
      if (event.event === 'error') waiter.reject(failure(event));
      else if (event.event === waiter.name) waiter.resolve(event);
      else continue;
      waiters.splice(waiters.indexOf(waiter), 1);
    }
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    events,
    next<N extends E['event']>(name: N, timeoutMs = options.defaultTimeoutMs) {
      type Named = Extract<E, { event: N }>;
      const seen = events.find((e) => e.event === name);
      if (seen) return Promise.resolve(seen as Named);
      const failed = events.find((e) => e.event === 'error');
      if (failed) return Promise.reject(failure(failed));
      return new Promise<Named>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${who}: no "${name}" within ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        );
        waiters.push({
          name,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e as Named);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
      });
    },
    alive,
    killNow() {
      if (alive()) child.kill('SIGKILL');
    },
    async kill() {
      if (alive()) child.kill('SIGKILL');
      return exited;
    },
  };
}
