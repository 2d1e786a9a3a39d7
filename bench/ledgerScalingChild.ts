/**
 * One consumer process of bench/ledgerScaling.ts: a ledger (or the baseline's pool) of its own, driven by
 * the parent over stdin so that every process of a group measures the same slot at the same time.
 *
 * Usage: DATABASE_URL=... node ledgerScalingChild.js ledger|baseline. Then, one command a line on stdin:
 * `run <slot> <ms> <concurrency>` answers one JSON line `{ ops, seconds, latencies }` on stdout (latencies
 * in ms, every operation's); `quit` closes the pool and exits. `ready` is printed once the pool is open.
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Pool } from 'pg';
import { createLedger } from '../src/ledger/createLedger.js';
import { baselineRun, LEASE_MS, noopPartner, OWNER, silentLogger, specFor } from './ledger.js';

async function main(): Promise<void> {
  const variant = process.argv[2];
  const url = process.env.DATABASE_URL;
  if ((variant !== 'ledger' && variant !== 'baseline') || !url)
    throw new Error('usage: DATABASE_URL=... ledgerScalingChild ledger|baseline');
  const tag = `${variant[0]}${process.pid}`;
  let op: (key: string) => Promise<unknown>;
  let close: () => Promise<void>;
  if (variant === 'ledger') {
    const ledger = await createLedger({
      databaseUrl: url,
      migrate: false,
      poolSize: 10,
      leaseMs: LEASE_MS,
      owner: OWNER,
      logger: silentLogger,
    });
    op = async (key) => {
      const result = await ledger.run(specFor(key), noopPartner(key));
      if (result.replayed) throw new Error(`new key ${key} was replayed`);
    };
    close = () => ledger.close();
  } else {
    const pool = new Pool({ connectionString: url, max: 10 });
    pool.on('error', () => undefined);
    op = (key) => baselineRun(pool, key);
    close = () => pool.end();
  }
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, slot, ms, concurrency] = line.trim().split(' ');
    if (command === 'quit') break;
    if (command !== 'run') throw new Error(`unknown command ${line}`);
    const latencies: number[] = [];
    let next = 0;
    const start = performance.now();
    const deadline = start + Number(ms);
    const worker = async () => {
      while (performance.now() < deadline) {
        const key = `${tag}-${slot}-${next++}`;
        const t0 = performance.now();
        await op(key);
        latencies.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: Number(concurrency) }, worker));
    const seconds = (performance.now() - start) / 1000;
    process.stdout.write(`${JSON.stringify({ ops: latencies.length, seconds, latencies })}\n`);
  }
  await close();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
