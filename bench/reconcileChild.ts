/**
 * The reconciliation engine without the CLI around it, for the benchmark only: the same `reconcile()` call
 * `intent-ledger reconcile` makes, on a plain pg pool WITHOUT the data source's 30 s client query timeout.
 * The benchmark runs it (in its own process, measured like the CLI) only when the CLI fails on that timeout,
 * to show what the engine itself needs at that size.
 *
 * Usage: DATABASE_URL=... node reconcileChild.js <partner> <file> <reconcilersDir>; prints the run report
 * as JSON (the CLI's `--json` fields) on stdout.
 */
import { Pool } from 'pg';
import pino from 'pino';
import { loadReconciler } from '../src/reconcile/loadReconcilers.js';
import { reconcile } from '../src/reconcile/reconcile.js';

async function main(): Promise<number> {
  const [partner, file, dir] = process.argv.slice(2);
  const url = process.env.DATABASE_URL;
  if (!partner || !file || !dir || !url)
    throw new Error('usage: DATABASE_URL=... reconcileChild <partner> <file> <dir>');
  const { config } = await loadReconciler(dir, partner);
  const pool = new Pool({ connectionString: url, max: 10, application_name: 'intent-ledger-bench' });
  try {
    const [report] = await reconcile({
      pool,
      reconciler: config,
      file,
      trigger: 'manual',
      logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2)),
    });
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report?.status === 'succeeded' ? 0 : 1;
  } finally {
    await pool.end();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
