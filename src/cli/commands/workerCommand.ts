import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadReconcilers, reconcilersDir } from '../../reconcile/loadReconcilers.js';
import { ReconciliationWorker } from '../../reconcile/reconciliationWorker.js';
import { WorkerMetrics } from '../../reconcile/workerMetrics.js';
import { UsageError } from '../errors/UsageError.js';
import { ensurePortFree, parsePort } from '../listenPort.js';
import { type MetricsServer, startMetricsServer } from '../metricsServer.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { parsePositiveInt } from './discrepancyArgs.js';

export const workerUsage =
  'intent-ledger worker [--reconcilers DIR] [--max-concurrent-runs N] [--metrics-port N [--metrics-host 127.0.0.1]]   run every reconciler on its schedule until SIGTERM';

/**
 * `intent-ledger worker`: schedules every reconciler; SIGTERM/SIGINT stop it cleanly. With `--metrics-port`,
 * serves `/metrics` (Prometheus) and `/healthz` on it (on 127.0.0.1 unless `--metrics-host` says otherwise).
 * `--max-concurrent-runs` caps the runs in flight at once (WorkerOptions.maxConcurrentRuns; by default half
 * the pool's connections).
 */
export async function workerCommand(args: string[]): Promise<number> {
  let flags: {
    reconcilers?: string;
    'max-concurrent-runs'?: string;
    'metrics-port'?: string;
    'metrics-host'?: string;
  };
  try {
    flags = parseArgs({
      args,
      strict: true,
      options: {
        reconcilers: { type: 'string' },
        'max-concurrent-runs': { type: 'string' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
      },
    }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const metricsPort = flags['metrics-port'] === undefined ? undefined : parsePort(flags['metrics-port']);
  if (flags['metrics-host'] !== undefined && metricsPort === undefined)
    throw new UsageError('--metrics-host needs --metrics-port');
  const metricsHost = flags['metrics-host'] ?? '127.0.0.1';
  const maxConcurrentRuns =
    flags['max-concurrent-runs'] === undefined
      ? undefined
      : parsePositiveInt('max-concurrent-runs', flags['max-concurrent-runs']);
  const reconcilers = await loadReconcilers(reconcilersDir(flags.reconcilers));
  if (reconcilers.length === 0)
    throw new UsageError(`no reconcilers in ${reconcilersDir(flags.reconcilers)}`);
  if (metricsPort !== undefined) await ensurePortFree(metricsPort, metricsHost);
  const database = await openCliDatabase();
  const metrics = metricsPort === undefined ? undefined : new WorkerMetrics(database.pool);
  let server: MetricsServer | undefined;
  try {
    if (metrics && metricsPort !== undefined) {
      server = await startMetricsServer({
        registry: metrics.registry,
        pool: database.pool,
        port: metricsPort,
        host: metricsHost,
      });
      console.log(`metrics: ${server.url}/metrics   health: ${server.url}/healthz`);
    }
    const worker = new ReconciliationWorker({
      pool: database.pool,
      reconcilers: reconcilers.map((reconciler) => reconciler.config),
      logger: pino({ level: process.env.LOG_LEVEL ?? 'info' }),
      onRun: metrics && ((report) => metrics.observeRun(report)),
      maxConcurrentRuns,
    });
    worker.start();
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    await worker.stop();
    return 0;
  } finally {
    await server?.close();
    await database.close();
  }
}
