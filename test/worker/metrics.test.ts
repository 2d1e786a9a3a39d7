import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Pool } from 'pg';
import acmePay from '../../reconcilers/acme-pay.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { raise } from '../discrepancies/seed.js';
import { runCli } from '../support/cliProcess.js';
import { specFactory, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

const CLI = join(__dirname, '../../src/cli/main.js');
const spec = specFactory('metrics');

/** The value of one sample line of Prometheus' text format, or undefined when it is not there. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('intent-ledger worker --metrics-port: /metrics and /healthz', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('worker_metrics');
  let sql: Pool;
  let dir: string;

  before(async () => {
    sql = sqlPool(db.url);
    // One intent whose outcome is unknown, and one open discrepancy.
    const ledger = await testLedger(db.url);
    const claim = await ledger.begin(spec());
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    await ledger.unknown(claim.intentId, claim.attempt, 'timeout');
    await ledger.close();
    await sql.query(`UPDATE intents SET created_at = now() - interval '90 seconds' WHERE id = $1`, [
      claim.intentId,
    ]);
    await raise(sql, { kind: 'amount_mismatch', partner: 'acme-pay' });

    dir = mkdtempSync(join(tmpdir(), 'il-worker-metrics-'));
    const report = join(dir, 'report.csv');
    writeFileSync(
      report,
      Buffer.from('PEDIDO;NSU;VALOR;MOEDA;DATA\r\norder-x;N1;1,00;BRL;28/11/2026 10:00:00\r\n', 'latin1'),
    );
    mkdirSync(join(dir, 'reconcilers'));
    const config: ReconcilerConfig = {
      ...acmePay,
      schedule: '* * * * * *',
      source: { ...acmePay.source, path: report } as ReconcilerConfig['source'],
    };
    writeFileSync(join(dir, 'reconcilers', 'acme-pay.js'), `module.exports = ${JSON.stringify(config)};\n`);
  });
  after(async () => {
    await sql.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves run outcomes and durations, discrepancies, stuck intents and their age; healthz; stops on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [CLI, 'worker', '--reconcilers', join(dir, 'reconcilers'), '--metrics-port', '0'],
      { env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const base = await until(
        async () => /metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(output)?.[1],
        20_000,
      );
      const text = await until(async () => {
        const response = await fetch(`${base}/metrics`);
        const body = await response.text();
        return sample(
          body,
          'intent_ledger_reconciliation_runs_total',
          'partner="acme-pay",status="succeeded"',
        )
          ? body
          : undefined;
      }, 20_000);
      expect(
        sample(
          text,
          'intent_ledger_reconciliation_run_duration_seconds_count',
          'partner="acme-pay",status="succeeded"',
        ),
      ).to.be.at.least(1);
      expect(
        sample(
          text,
          'intent_ledger_unsettled_discrepancies',
          'partner="acme-pay",kind="amount_mismatch",status="open"',
        ),
      ).to.equal(1);
      expect(sample(text, 'intent_ledger_stuck_intents', 'partner="acme-pay"')).to.equal(1);
      expect(
        sample(text, 'intent_ledger_oldest_stuck_intent_age_seconds', 'partner="acme-pay"'),
      ).to.be.within(89, 600);
      expect(text).to.contain('# TYPE intent_ledger_discrepancies_raised_total counter');

      const health = await fetch(`${base}/healthz`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.equal({ status: 'ok' });
      expect((await fetch(`${base}/nowhere`)).status).to.equal(404);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, output).to.equal(0);
  });

  it('a --metrics-port that is not a port, or --metrics-host alone: usage errors (2)', async () => {
    const reconcilers = join(dir, 'reconcilers');
    for (const args of [
      ['--metrics-port', 'nine'],
      ['--metrics-host', '0.0.0.0'],
    ]) {
      const run = await runCli(['worker', '--reconcilers', reconcilers, ...args], { DATABASE_URL: db.url });
      expect(run.code, args.join(' ')).to.equal(2);
    }
  });
});

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
