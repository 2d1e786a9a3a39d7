import type { Pool } from 'pg';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ReconciliationResult } from './reconciliationResult.js';

/**
 * What a reconciliation worker shows Prometheus. Two kinds:
 * - what this worker did: runs by outcome and their durations, discrepancies raised by kind, intents settled;
 * - what the ledger's database holds now, read at each scrape (so every worker reports the same shared
 *   truth): stuck intents by partner, the oldest stuck intent's age, unsettled discrepancies by kind.
 * Calls, replays (duplicates suppressed) and unknown outcomes happen in the consumers' processes: each exposes
 * them from its own ledger (`ledger.metrics.registerWith(registry)`).
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly runs = new Counter({
    name: 'intent_ledger_reconciliation_runs_total',
    help: 'Reconciliation runs this worker made, by partner and outcome (succeeded, failed, dry_run).',
    labelNames: ['partner', 'status'],
    registers: [this.registry],
  });
  private readonly runSeconds = new Histogram({
    name: 'intent_ledger_reconciliation_run_duration_seconds',
    help: 'How long each reconciliation run took, by partner and outcome.',
    labelNames: ['partner', 'status'],
    buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800],
    registers: [this.registry],
  });
  private readonly raised = new Counter({
    name: 'intent_ledger_discrepancies_raised_total',
    help: 'Discrepancies raised by this worker, by partner and kind.',
    labelNames: ['partner', 'kind'],
    registers: [this.registry],
  });
  private readonly settled = new Counter({
    name: 'intent_ledger_intents_settled_by_reconciliation_total',
    help: 'Stuck intents this worker settled from partner reports, by partner and outcome.',
    labelNames: ['partner', 'outcome'],
    registers: [this.registry],
  });

  constructor(pool: Pool) {
    // One read of the database per scrape for all three gauges (each gauge's collect shares it); a partner
    // with nothing stuck disappears from the gauges.
    let reading: Promise<void> | undefined;
    const read = (): Promise<void> => {
      reading ??= readDatabaseGauges(pool, stuck, oldest, unsettled).finally(() => {
        reading = undefined;
      });
      return reading;
    };
    const stuck = new Gauge({
      name: 'intent_ledger_stuck_intents',
      help: 'Intents whose outcome nobody knows yet (unknown, or in progress past their lease), by partner.',
      labelNames: ['partner'],
      registers: [this.registry],
      collect: read,
    });
    const oldest = new Gauge({
      name: 'intent_ledger_oldest_stuck_intent_age_seconds',
      help: 'Age of the oldest stuck intent (since it was created), by partner.',
      labelNames: ['partner'],
      registers: [this.registry],
      collect: read,
    });
    const unsettled = new Gauge({
      name: 'intent_ledger_unsettled_discrepancies',
      help: 'Discrepancies not yet resolved or dismissed, by partner, kind and status (open, acknowledged).',
      labelNames: ['partner', 'kind', 'status'],
      registers: [this.registry],
      collect: read,
    });
  }

  /** Records one finished run (not a slot another worker took). */
  observeRun(report: ReconciliationResult): void {
    if (report.status === 'skipped') return;
    const labels = { partner: report.partner, status: report.status };
    this.runs.inc(labels);
    this.runSeconds.observe(labels, report.durationMs / 1000);
    for (const [kind, count] of Object.entries(report.discrepancies))
      if (count > 0) this.raised.inc({ partner: report.partner, kind }, count);
    if (report.resolved.completed > 0)
      this.settled.inc({ partner: report.partner, outcome: 'completed' }, report.resolved.completed);
    if (report.resolved.notExecuted > 0)
      this.settled.inc({ partner: report.partner, outcome: 'not_executed' }, report.resolved.notExecuted);
  }
}

async function readDatabaseGauges(pool: Pool, stuck: Gauge, oldest: Gauge, unsettled: Gauge): Promise<void> {
  const [intents, discrepancies] = await Promise.all([
    // The partial index intents_unsettled holds exactly the rows looked at here.
    pool.query<{ partner: string; count: string; age: string }>(
      `SELECT partner, count(*) AS count, extract(epoch FROM now() - min(created_at))::text AS age
         FROM intents
        WHERE status IN ('in_progress', 'unknown') AND (status = 'unknown' OR lease_expires_at < now())
        GROUP BY partner`,
    ),
    pool.query<{ partner: string; kind: string; status: string; count: string }>(
      `SELECT partner, kind, status, count(*) AS count FROM discrepancies
        WHERE status IN ('open', 'acknowledged') GROUP BY partner, kind, status`,
    ),
  ]);
  stuck.reset();
  oldest.reset();
  unsettled.reset();
  for (const row of intents.rows) {
    stuck.set({ partner: row.partner }, Number(row.count));
    oldest.set({ partner: row.partner }, Number(row.age));
  }
  for (const row of discrepancies.rows)
    unsettled.set({ partner: row.partner, kind: row.kind, status: row.status }, Number(row.count));
}
