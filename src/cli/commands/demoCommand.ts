import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import pino from 'pino';
import acmePay from '../../../reconcilers/acme-pay.js';
import { DEFAULT_EMBEDDED_DATA_DIR } from '../../database/databaseDefaults.js';
import { startFlakyAcquirer } from '../../demo/flakyAcquirer.js';
import { withPartnerSurprises } from '../../demo/partnerReportWithSurprises.js';
import { deliver, simulateConsumers } from '../../demo/simulateConsumers.js';
import { writeSettlementFile } from '../../demo/writeSettlementFile.js';
import { Ledger } from '../../ledger/ledger.js';
import { resolveLedgerOptions } from '../../ledger/options.js';
import type { ReconcilerConfig } from '../../reconcile/reconcilerConfig.js';
import { ReconciliationWorker } from '../../reconcile/reconciliationWorker.js';
import { createReviewServer } from '../../review/createReviewServer.js';
import { UsageError } from '../errors/UsageError.js';
import { ensurePortFree, explainListenError, parsePort } from '../listenPort.js';
import { openCliDatabase } from '../openCliDatabase.js';

export const demoUsage =
  'intent-ledger demo [--orders 40] [--seed 7] [--port 3000] [--exit]   a simulated day on the embedded database (npm start)';

const PARTNER = 'acme-pay';
/** Short leases so the day's stuck calls become reconcilable within seconds, not minutes. */
const DEMO_LEASE_MS = 2_000;

/**
 * `npm start`: consumers receive redelivered order messages and charge a flaky loopback acquirer through
 * the ledger; the acquirer's settlement file arrives; the worker reconciles it; the review page serves
 * the resulting discrepancies (until Ctrl-C, or not at all with `--exit`).
 */
export async function demoCommand(args: string[]): Promise<number> {
  const { values } = parseDemoArgs(args);
  const orders = Number(values.orders);
  const seed = Number(values.seed);
  const port = parsePort(values.port);
  if (!values.exit) await ensurePortFree(port, '127.0.0.1');
  const dataDir = process.env.INTENT_LEDGER_DATA_DIR ?? DEFAULT_EMBEDDED_DATA_DIR;
  console.log(
    `1. database: ${process.env.DATABASE_URL ? 'DATABASE_URL' : `embedded PostgreSQL under ${dataDir}`}, migrated`,
  );
  const database = await openCliDatabase();
  const partnerToken = randomBytes(12).toString('hex');
  const dayStartedAt = new Date(Date.now() - 1_000);
  const runTag = `demo-${dayStartedAt
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}`;
  const acquirer = await startFlakyAcquirer(seed, partnerToken, `${runTag}-nsu-`);
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'error' });
  const ledger = new Ledger(
    database.dataSource,
    database.pool,
    resolveLedgerOptions({ leaseMs: DEMO_LEASE_MS, logger }),
    async () => {},
  );
  try {
    console.log(
      `2. a day of orders: ${orders} messages, each delivered 1-3 times, 4 consumers, flaky acquirer at ${acquirer.url}`,
    );
    const tally = await simulateConsumers({
      ledger,
      partnerApi: { url: acquirer.url, token: partnerToken },
      partner: PARTNER,
      runTag,
      orders,
      consumers: 4,
      seed,
    });
    console.table(tally);
    const executions = acquirer.executions.filter((execution) =>
      execution.reference.startsWith(`${runTag}-`),
    );
    const executedOrders = new Set(executions.map((execution) => execution.reference)).size;
    console.log(
      `   the acquirer executed ${executions.length} charges for ${executedOrders} distinct orders: none twice`,
    );
    await printStatuses(database.pool, runTag, '   intents after the day');

    const reportDir = resolve(dirnameOf(dataDir), 'reports', PARTNER);
    mkdirSync(reportDir, { recursive: true });
    const reportFile = join(reportDir, `settlement-${runTag}.csv`);
    writeSettlementFile(reportFile, withPartnerSurprises(executions, runTag));
    console.log(`3. the acquirer's settlement file arrived: ${reportFile}`);

    // Stuck intents are only looked at once their lease has ended.
    await new Promise((done) => setTimeout(done, DEMO_LEASE_MS + 500));
    const reconciler: ReconcilerConfig = {
      ...acmePay,
      stuckAfter: '0s',
      settlementLag: '0s',
      // The simulated acquirer runs in this process, on our clock; the default 15 minutes would leave no
      // start of a few-second day far enough inside its file to be proven absent.
      clockSkew: '0s',
      // The file is the whole simulated day.
      coverage: { from: dayStartedAt, to: new Date() },
      source: { ...acmePay.source, type: 'csv', path: reportFile } as ReconcilerConfig['source'],
    };
    const worker = new ReconciliationWorker({ pool: database.pool, reconcilers: [reconciler], logger });
    await worker.fire(reconciler, new Date());
    await worker.stop();
    const run = await database.pool.query(
      `SELECT id, status, rows_read, rows_rejected, matched, resolved_completed, resolved_not_executed, discrepancies
         FROM reconciliation_runs WHERE source = $1 ORDER BY id DESC LIMIT 1`,
      [reportFile],
    );
    const r = run.rows[0];
    console.log(
      `4. the worker reconciled it (run ${r.id}, ${r.status}): ${r.rows_read} rows, ${r.matched} matched; ` +
        `settled ${r.resolved_completed} unknown intents as completed and ${r.resolved_not_executed} as not executed`,
    );
    console.log(`   new discrepancies: ${JSON.stringify(r.discrepancies)}`);
    await printStatuses(database.pool, runTag, '   intents after reconciliation');

    // Proven "not executed" means safe to retry: the broker's next redelivery charges them (attempt 2).
    const retry = await database.pool.query<{ key: string }>(
      `SELECT key FROM intents WHERE partner = $1 AND key LIKE $2 AND status = 'not_executed' ORDER BY id`,
      [PARTNER, `${runTag}-%`],
    );
    acquirer.setFault(undefined);
    for (const { key } of retry.rows) {
      const order = Number(/-order-(\d+):charge$/.exec(key)?.[1]);
      await deliver(
        { ledger, partnerApi: { url: acquirer.url, token: partnerToken }, partner: PARTNER, runTag },
        order,
      );
    }
    if (retry.rows.length > 0) {
      console.log(
        `   ${retry.rows.length} orders proven not executed were redelivered and charged as attempt 2`,
      );
      await printStatuses(database.pool, runTag, '   intents at the end of the day');
    }

    if (values.exit) return 0;
    const reviewToken = process.env.REVIEW_TOKEN ?? randomBytes(18).toString('base64url');
    const server = createReviewServer({ pool: database.pool, token: reviewToken, logger });
    const address = await server
      .listen({ port, host: '127.0.0.1' })
      .catch((error: NodeJS.ErrnoException) => Promise.reject(explainListenError(error, port, '127.0.0.1')));
    console.log(
      `5. finance review page: ${address}   token: ${process.env.REVIEW_TOKEN ? '(REVIEW_TOKEN)' : reviewToken}`,
    );
    console.log('   Ctrl-C to stop. `npm start` again adds another day; `rm -rf .data` starts over.');
    await new Promise<void>((done) => {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    });
    await server.close();
    return 0;
  } finally {
    await ledger.close();
    await acquirer.close();
    await database.close();
  }
}

async function printStatuses(pool: Pool, runTag: string, title: string): Promise<void> {
  const states = await pool.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM intents WHERE partner = $1 AND key LIKE $2 GROUP BY status ORDER BY status`,
    [PARTNER, `${runTag}-%`],
  );
  console.log(`${title}: ${states.rows.map((row) => `${row.status} ${row.n}`).join(', ')}`);
}

/** `.data/postgres` -> `.data`: reports live beside the database. */
function dirnameOf(dataDir: string): string {
  return resolve(dataDir, '..');
}

function parseDemoArgs(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        orders: { type: 'string', default: '40' },
        seed: { type: 'string', default: '7' },
        port: { type: 'string', default: '3000' },
        exit: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
