import { expect } from 'chai';
import { declaredCoverage } from '../../src/reconcile/coverage.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { resolveRunSettings } from '../../src/reconcile/runSettings.js';
import {
  csvReconciler,
  intentRow,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * A daily file's coverage in a zone whose clocks skip midnight (America/Santiago on 2025-09-07: 24:00 on
 * the 6th became 01:00 on the 7th). The 7th is a 23-hour calendar day, [07T01:00-03, 08T00:00-03]; the 8th's
 * file covers from 08T00:00-03. A coverage that ends at 08T01:00-03 claims the first hour of the 8th, which
 * is the 8th file's: an intent started in it and executed there must not be proven absent by the 7th's file.
 */
describe('reconcile: a daily file whose day starts at a skipped midnight', () => {
  const fx = useReconcileFixture('rec_skipped_midnight');

  it('the 23-hour day covers up to the next midnight, not an hour into the next day', async () => {
    const partner = partnerName('santiago');
    const reconciler = (file: string): ReconcilerConfig => ({
      ...csvReconciler(partner, file),
      timezone: 'America/Santiago',
      settlementLag: '20m',
      clockSkew: '5m',
      coverage: { fromFileName: { pattern: '(\\d{4}-\\d{2}-\\d{2})\\.csv$' } },
    });
    // Executed on the 7th at noon, listed in the 7th's file: keeps the file plausible.
    const noon = await unknownIntent(fx.ledger, spec(partner, 'noon-7th'));
    await place(fx.sql, noon, { startedAt: new Date('2025-09-07T15:00:00Z') });
    // Started 00:10 on the 8th (03:10Z), executed a minute later: the 8th's file lists it.
    const early = await unknownIntent(fx.ledger, spec(partner, 'early-8th'));
    await place(fx.sql, early, { startedAt: new Date('2025-09-08T03:10:00Z') });

    const seventh = writeCsv(fx.dir, '2025-09-07.csv', [
      { reference: 'noon-7th', nsu: 'S-1', amount: '10.00', executedAt: '2025-09-07T15:01:00Z' },
    ]);
    const [first] = await reconcile({ pool: fx.sql, reconciler: reconciler(seventh) });
    expect(first.status).to.equal('succeeded');
    // Proven absent by the wrong day's file, it would be retried: a second charge.
    expect((await intentRow(fx.sql, early)).status).to.equal('unknown');
    expect(first.coverage?.to.toISOString()).to.equal('2025-09-08T03:00:00.000Z');

    const eighth = writeCsv(fx.dir, '2025-09-08.csv', [
      { reference: 'early-8th', nsu: 'S-2', amount: '10.00', executedAt: '2025-09-08T03:11:00Z' },
    ]);
    await reconcile({ pool: fx.sql, reconciler: reconciler(eighth) });
    expect((await intentRow(fx.sql, early)).status).to.equal('completed');
  });
  it('every day of a year in such zones runs midnight to midnight: 23, 24 or 25 hours, each day ending where the next begins', async () => {
    for (const timezone of ['America/Santiago', 'America/Sao_Paulo', 'Europe/Amsterdam', 'Atlantic/Azores']) {
      const config = {
        ...csvReconciler('p', 'f.csv'),
        timezone,
        coverage: { fromFileName: { pattern: '(\\d{4}-\\d{2}-\\d{2})\\.csv$' } },
      };
      const settings = resolveRunSettings(config);
      let previousEnd: number | undefined;
      for (let day = 0; day < 366; day++) {
        const date = new Date(Date.UTC(2018, 0, 1 + day)).toISOString().slice(0, 10);
        const { coverage } = await declaredCoverage(fx.sql, { settings, file: `${date}.csv` });
        const hours = (coverage!.to.getTime() - coverage!.from.getTime()) / 3_600_000;
        expect([23, 24, 25], `${timezone} ${date}: ${hours} h`).to.include(hours);
        if (previousEnd !== undefined)
          expect(coverage!.from.getTime(), `${timezone} ${date}`).to.equal(previousEnd);
        previousEnd = coverage!.to.getTime();
      }
    }
  });
});
