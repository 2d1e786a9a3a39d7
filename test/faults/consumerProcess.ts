import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** A line the example consumer (examples/rabbitmqConsumer.ts) logs, as far as the tests read it. */
export interface ConsumerLine {
  event?: string;
  orderId?: string;
  key?: string;
  outcome?: string;
  action?: string;
  attempt?: number;
  /** On a `park` line: how many times this message has been parked, this time included. */
  parks?: number;
  detail?: string;
  redelivered?: boolean;
  owner?: string;
  msg?: string;
  level?: number;
}

/** The example consumer running as a child process, exactly as `node dist/examples/rabbitmqConsumer.js`. */
export interface ConsumerProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: ConsumerLine[];
  /** Messages received and not yet acked or nacked (from its `received` / `message` lines). */
  inHand(): number;
  /** Messages it acked (`action: 'ack'`; parked messages are counted by `parks()`). */
  acks(): number;
  /** Messages it parked (`action: 'park'`: copied to the parking queue, then acked). */
  parks(): number;
  /** Time of its last line (ms since epoch). */
  lastLineAt(): number;
  /**
   * Time of its last line that shows work other than parking (ms since epoch): not a `received` line, not a
   * `park` line. A message whose intent is still unknown cycles through the parking queue every
   * PARK_DELAY_MS, so "no line for a while" never comes while anything is parked.
   */
  lastWorkAt(): number;
  /** How long it has held at least one message without a break (ms; 0 when it holds none). */
  busyFor(): number;
  alive(): boolean;
  /** Resolves once a line matching `predicate` has been logged; rejects if the process exits first. */
  waitFor(what: string, predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /** Sends `signal` and resolves with how the process ended. */
  stop(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/** The compiled consumer, wherever the test was compiled to (dist/ or dist-*). */
export const consumerScript = join(__dirname, '..', '..', 'examples', 'rabbitmqConsumer.js');

export function startConsumer(name: string, env: Record<string, string>): ConsumerProcess {
  const child = spawn(process.execPath, [consumerScript], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'debug', LEDGER_LOG_LEVEL: 'warn', CONSUMER_NAME: name, ...env },
  });
  const lines: ConsumerLine[] = [];
  let received = 0;
  let settled = 0;
  let acked = 0;
  let parked = 0;
  let last = Date.now();
  let lastWork = Date.now();
  let busySince: number | undefined;
  let stderr = '';
  let ended = false;
  const checks = new Set<() => void>();
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      ended = true;
      for (const check of [...checks]) check();
      resolve({ code, signal });
    });
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (text) => {
    let line: ConsumerLine;
    try {
      line = JSON.parse(text) as ConsumerLine;
    } catch {
      line = { msg: text };
    }
    lines.push(line);
    last = Date.now();
    if (line.event === 'received') {
      received++;
      busySince ??= last;
    } else if (line.event !== 'message' || line.action !== 'park') lastWork = last;
    if (line.event === 'message') {
      settled++;
      if (line.action === 'ack') acked++;
      if (line.action === 'park') parked++;
      if (received === settled) busySince = undefined;
    }
    for (const check of [...checks]) check();
  });
  return {
    name,
    child,
    lines,
    inHand: () => received - settled,
    acks: () => acked,
    parks: () => parked,
    lastLineAt: () => last,
    lastWorkAt: () => lastWork,
    busyFor: () => (busySince === undefined ? 0 : Date.now() - busySince),
    alive: () => !ended,
    exited,
    stderr: () => stderr,
    waitFor(what, predicate, timeoutMs = 20_000) {
      if (predicate()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          checks.delete(check);
          reject(
            new Error(
              `${name}: no "${what}" within ${timeoutMs} ms (acks ${acked}, in hand ${received - settled}); last lines: ${lines
                .slice(-5)
                .map((l) => JSON.stringify(l))
                .join(' | ')}; stderr: ${stderr}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          if (predicate()) {
            clearTimeout(timer);
            checks.delete(check);
            resolve();
          } else if (ended) {
            clearTimeout(timer);
            checks.delete(check);
            reject(new Error(`${name} exited before "${what}"; stderr: ${stderr}`));
          }
        };
        checks.add(check);
      });
    },
    async stop(signal) {
      if (!ended) child.kill(signal);
      return exited;
    },
  };
}
