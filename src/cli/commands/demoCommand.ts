import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { startFlakyAcquirer } from '../../demo/flakyAcquirer.js';
import { simulateConsumers } from '../../demo/simulateConsumers.js';
import { Ledger } from '../../ledger.js';
import { resolveLedgerOptions } from '../../options.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { UsageError } from '../usageError.js';

export const demoUsage =
  'intent-ledger demo [--orders 40] [--seed 7]   a simulated day on the embedded database (npm start)';

const PARTNER = 'acme-pay';

/**
 * `npm start`: consumers receive redelivered order messages and charge a flaky loopback acquirer through
 * the ledger; then the numbers show that every order was charged at most once.
 */
export async function demoCommand(args: string[]): Promise<number> {
  const { values } = parseDemoArgs(args);
  const orders = Number(values.orders);
  const seed = Number(values.seed);
  console.log(
    'intent-ledger demo: starting the database (embedded PostgreSQL under .data/ unless DATABASE_URL is set)',
  );
  const database = await openCliDatabase();
  const token = randomBytes(12).toString('hex');
  const partner = await startFlakyAcquirer(seed, token);
  const ledger = new Ledger(
    database.dataSource,
    database.pool,
    resolveLedgerOptions({ leaseMs: 5_000, logger: pino({ level: process.env.LOG_LEVEL ?? 'error' }) }),
    async () => {},
  );
  try {
    const runTag = `demo-${new Date()
      .toISOString()
      .replace(/[-:.TZ]/g, '')
      .slice(0, 14)}`;
    console.log(
      `acquirer fake listening on ${partner.url}; ${orders} orders, each delivered 1-3 times to 4 consumers`,
    );
    const tally = await simulateConsumers({
      ledger,
      partnerApi: { url: partner.url, token },
      partner: PARTNER,
      runTag,
      orders,
      consumers: 4,
      seed,
    });
    const executions = partner.executions.filter((execution) => execution.reference.startsWith(`${runTag}-`));
    const executedReferences = new Set(executions.map((execution) => execution.reference));
    const states = await database.pool.query<{ status: string; n: string }>(
      `SELECT status, count(*) AS n FROM intents WHERE partner = $1 AND key LIKE $2 GROUP BY status ORDER BY status`,
      [PARTNER, `${runTag}-%`],
    );
    console.log('\nwhat the consumers saw');
    console.table(tally);
    console.log('intents by status');
    console.table(Object.fromEntries(states.rows.map((row) => [row.status, Number(row.n)])));
    console.log(
      `partner executions: ${executions.length} for ${executedReferences.size} distinct orders ` +
        `(duplicates: ${executions.length - executedReferences.size})`,
    );
    const waiting = states.rows.find((row) => row.status === 'unknown');
    if (waiting) {
      console.log(
        `${waiting.n} intents have an unknown outcome: they are never retried blindly and wait for reconciliation.`,
      );
    }
    return executions.length === executedReferences.size ? 0 : 1;
  } finally {
    await ledger.close();
    await partner.close();
    await database.close();
  }
}

function parseDemoArgs(args: string[]) {
  try {
    return parseArgs({
      args,
      options: { orders: { type: 'string', default: '40' }, seed: { type: 'string', default: '7' } },
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
