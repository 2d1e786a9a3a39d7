import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { capturingLogger } from '../support/testLedger.js';
import {
  csvReconciler,
  dbNow,
  minutes,
  noDiscrepancies,
  partnerName,
  useReconcileFixture,
} from './support.js';

const ROWS = 200_000;
const MATCHED = 199_500;
const STUCK_FOUND = 1_000;

/**
 * 200,000 report rows against 201,000 intents seeded in SQL (the ledger's API would take minutes to create
 * them): 1,000 stuck and found, 198,500 completed and found, 500 completed and missing, 1,000 stuck and
 * absent; 500 orphan rows. Prints the throughput; asserts only the outcome, never the time.
 */
describe('reconcile: a 200k-row report', function () {
  this.timeout(600_000);
  const fx = useReconcileFixture('rec_scale');

  it('reconciles set-based with exact outcomes', async () => {
    const partner = partnerName('scale');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    // g <= 1000: stuck, in the report; <= 199,500: completed, in the report; <= 200,000: completed,
    // missing; <= 201,000: stuck, absent. The last two groups start an hour into the coverage.
    await fx.sql.query(
      `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status, attempt,
                            lease_expires_at, created_at, attempt_started_at, settled_at, partner_reference,
                            resolved_by)
       SELECT $1, 'charge', 'k-' || g, 'fp', 's-' || g, 10.00, 'BRL', s.status, 1,
              CASE WHEN s.status = 'unknown' THEN now() - interval '1 hour' END,
              s.started_at, s.started_at, CASE WHEN s.status = 'completed' THEN now() END,
              CASE WHEN s.status = 'completed' THEN 'NSU-' || g END, 'caller'
         FROM generate_series(1, 201000) g
        CROSS JOIN LATERAL (
          SELECT CASE WHEN g <= 1000 OR g > 200000 THEN 'unknown' ELSE 'completed' END AS status,
                 $2::timestamptz + CASE WHEN g > 199500 THEN interval '60 minutes'
                                        ELSE (g % 400) * interval '1 minute' END AS started_at
        ) s`,
      [partner, base],
    );
    await fx.sql.query(
      `INSERT INTO intent_attempts (intent_id, attempt, started_at, lease_expires_at, outcome)
       SELECT id, 1, created_at, created_at + interval '30 seconds',
              CASE WHEN status = 'completed' THEN 'completed' ELSE 'unknown' END
         FROM intents WHERE partner = $1`,
      [partner],
    );
    await fx.sql.query('ANALYZE intents');
    await fx.sql.query('ANALYZE intent_attempts');

    const file = join(fx.dir, 'scale.csv');
    const out = createWriteStream(file);
    out.write('reference,nsu,amount,currency,executed_at\n');
    for (let g = 1; g <= ROWS; g++) {
      const orphan = g > MATCHED;
      const at = orphan ? minutes(base, 100) : new Date(base.getTime() + (g % 400) * 60_000 + 30_000);
      const line = orphan
        ? `orphan-${g},ORPH-${g},10.00,BRL,${at.toISOString()}\n`
        : `s-${g},${g <= STUCK_FOUND ? 'FOUND' : 'NSU'}-${g},10.00,BRL,${at.toISOString()}\n`;
      if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    out.end();
    await finished(out);

    // The report declares the span of its rows, [base + 30 s, base + 399 min 30 s].
    const reconciler = csvReconciler(partner, file, {
      coverage: { from: new Date(base.getTime() + 30_000), to: minutes(base, 399.5) },
    });
    const entries: { level: string; object: object; message: string }[] = [];
    const started = performance.now();
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler,
      logger: capturingLogger(entries),
    });
    const seconds = (performance.now() - started) / 1000;
    const finishedEntry = entries.find((e) => e.message === 'reconciliation run finished')?.object as {
      readMs: number;
      decideMs: number;
    };
    console.log(
      `      ${ROWS} rows in ${seconds.toFixed(1)} s: ${Math.round(ROWS / seconds)} rows/s ` +
        `(read+stage ${finishedEntry.readMs} ms, match+decide+apply ${finishedEntry.decideMs} ms)`,
    );

    expect(run).to.deep.include({
      status: 'succeeded',
      error: null,
      rowsRead: ROWS,
      rowsRejected: 0,
      matched: MATCHED,
      resolved: { completed: STUCK_FOUND, notExecuted: 1_000 },
      discrepancies: { ...noDiscrepancies(), missing_at_partner: 500, orphan_partner_record: 500 },
    });
    const counts = await fx.sql.query(
      `SELECT (SELECT count(*)::int FROM partner_records WHERE partner = $1) AS records,
              (SELECT count(*)::int FROM intents WHERE partner = $1 AND status = 'completed'
                  AND partner_reference LIKE 'FOUND-%') AS found,
              (SELECT count(*)::int FROM intents WHERE partner = $1 AND status = 'not_executed') AS not_executed`,
      [partner],
    );
    expect(counts.rows[0]).to.deep.equal({ records: ROWS, found: STUCK_FOUND, not_executed: 1_000 });

    const again = performance.now();
    const [rerun] = await reconcile({ pool: fx.sql, reconciler });
    console.log(`      re-run: ${((performance.now() - again) / 1000).toFixed(1)} s`);
    expect(rerun).to.deep.include({
      status: 'succeeded',
      matched: MATCHED,
      resolved: { completed: 0, notExecuted: 0 },
      discrepancies: noDiscrepancies(),
    });
  });
});
