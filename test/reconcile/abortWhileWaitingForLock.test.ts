import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { lockPartnerReconciliation } from '../../src/reconcile/sql/lockPartnerReconciliation.js';
import {
  csvReconciler,
  dbNow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * A run waiting for its partner's reconciliation lock (held by another process's long run, or by a
 * connection whose client vanished) is told to stop: ReconciliationWorker.stop() aborts it after
 * gracefulStopMs and waits for it, and the README promises SIGTERM rolls a run back after 10 s. The signal
 * must end the wait, not only be looked at once the lock is granted.
 */
describe('reconcile: an abort while the run waits for the partner lock', () => {
  const fx = useReconcileFixture('rec_abort_lock_wait');

  it('ends the run promptly as failed "aborted", with the lock still held elsewhere', async () => {
    const partner = partnerName('lock-wait');
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    const id = await unknownIntent(fx.ledger, spec(partner, 'r1'));
    await place(fx.sql, id, { startedAt: minutes(base, 30) });
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: 'r1', nsu: 'W-1', amount: '10.00', executedAt: minutes(base, 31) },
    ]);
    const holder = await fx.sql.connect();
    await holder.query('BEGIN');
    await lockPartnerReconciliation(holder, partner);
    const releaseAfter = setTimeout(() => void holder.query('ROLLBACK'), 8_000);
    try {
      const controller = new AbortController();
      let abortedAt = 0;
      const started = reconcile({
        pool: fx.sql,
        reconciler: csvReconciler(partner, file),
        signal: controller.signal,
        onProgress: (progress) => {
          if (progress.phase === 'deciding') {
            setTimeout(() => {
              abortedAt = Date.now();
              controller.abort();
            }, 300);
          }
        },
      });
      const [report] = await started;
      const tookMs = Date.now() - abortedAt;
      expect(report).to.deep.include({ status: 'failed', error: 'aborted' });
      expect(tookMs, 'ms from abort to the run ending').to.be.below(2_000);
    } finally {
      clearTimeout(releaseAfter);
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });
});
