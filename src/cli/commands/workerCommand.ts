import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadReconcilers, reconcilersDir } from '../../reconcile/loadReconcilers.js';
import { ReconciliationWorker } from '../../reconcile/reconciliationWorker.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';

export const workerUsage =
  'intent-ledger worker [--reconcilers DIR]   run every reconciler on its schedule until SIGTERM';

/** `intent-ledger worker`: schedules every reconciler; SIGTERM/SIGINT stop it cleanly. */
export async function workerCommand(args: string[]): Promise<number> {
  let flags: { reconcilers?: string };
  try {
    flags = parseArgs({ args, strict: true, options: { reconcilers: { type: 'string' } } }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const reconcilers = await loadReconcilers(reconcilersDir(flags.reconcilers));
  if (reconcilers.length === 0)
    throw new UsageError(`no reconcilers in ${reconcilersDir(flags.reconcilers)}`);
  const database = await openCliDatabase();
  const worker = new ReconciliationWorker({
    pool: database.pool,
    reconcilers: reconcilers.map((reconciler) => reconciler.config),
    logger: pino({ level: process.env.LOG_LEVEL ?? 'info' }),
  });
  worker.start();
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await worker.stop();
  await database.close();
  return 0;
}
