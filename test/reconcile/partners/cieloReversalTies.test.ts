import { expect } from 'chai';
import cielo from '../../../reconcilers/cielo.js';
import { reconcile } from '../../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import { resolveRunSettings } from '../../../src/reconcile/runSettings.js';
import { validateReconciler } from '../../../src/reconcile/validateReconciler.js';
import { intentRow, partnerName } from '../support.js';
import { CIELO_FIXTURE, cieloFile, cv, ro } from './cieloRecords.js';
import { useShippedPartner } from './shippedPartner.js';

/**
 * Cielo's NSU/DOC numbers a sale within its day and repeats (`match.partnerReferenceUnique: false`): a
 * reversal is tied to its sale by our order code, and one without it is stored untied, with a warning that
 * says why, never tied to whichever sale had that NSU first.
 */
describe('cielo: reversals are tied by our order code, not by a day-scoped NSU', () => {
  const { fx, config, stuck } = useShippedPartner({
    name: 'cielo_ties',
    reconciler: cielo,
    fixture: CIELO_FIXTURE,
    currency: 'BRL',
  });

  /** order-A and order-B, both sold with NSU 000101 on two days, both completed. */
  async function twoSalesOneNsu(partner: string) {
    const a = await stuck(partner, 'order-A', '25.00', '2026-11-30T13:00:00Z');
    const b = await stuck(partner, 'order-B', '40.00', '2026-12-01T13:00:00Z');
    const days = [
      cieloFile(fx.dir, `${partner}_a.txt`, [
        ro('0000001', '01'),
        cv({ roNumber: '0000001', sign: '+', cents: 2500, nsu: '000101', reference: 'order-A' }),
      ]),
      cieloFile(fx.dir, `${partner}_b.txt`, [
        ro('0000002', '01'),
        cv({
          roNumber: '0000002',
          sign: '+',
          cents: 4000,
          nsu: '000101',
          reference: 'order-B',
          date: '20261201',
        }),
      ]),
    ];
    for (const file of days) {
      const [r] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
      expect(r.status, `error: ${r.error}`).to.equal('succeeded');
    }
    return { a, b };
  }

  /** A chargeback (RO origin 28) of 40.00 with NSU 000101 and `reference`, in a file of its own. */
  function chargeback(partner: string, reference: string): string {
    return cieloFile(fx.dir, `${partner}_${reference || 'blank'}_chargeback.txt`, [
      ro('0000003', '03', '28'),
      cv({
        roNumber: '0000003',
        sign: '-',
        cents: 4000,
        nsu: '000101',
        reference,
        date: '20261205',
        time: '000000',
      }),
    ]);
  }

  async function reversalIntent(partner: string): Promise<string | null> {
    const stored = await fx.sql.query(
      `SELECT intent_id, reverses FROM partner_records WHERE partner = $1 AND kind = 'reversal'`,
      [partner],
    );
    expect(stored.rows).to.have.length(1);
    expect(stored.rows[0].reverses === null).to.equal(stored.rows[0].intent_id === null);
    return stored.rows[0].intent_id;
  }

  it('a chargeback naming order-B is tied to order-B, though order-A had its NSU first', async () => {
    const partner = partnerName('cielo');
    const { b } = await twoSalesOneNsu(partner);
    const file = chargeback(partner, 'order-B');
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(await reversalIntent(partner)).to.equal(b);
    expect(report.warnings.filter((w) => w.includes('reverse no execution'))).to.deep.equal([]);
  });

  it('a chargeback without our order code is stored untied, and the warning says its NSU is not enough', async () => {
    const partner = partnerName('cielo');
    const { a, b } = await twoSalesOneNsu(partner);
    const file = chargeback(partner, '');
    const [report] = await reconcile({ pool: fx.sql, reconciler: config(partner, file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(await reversalIntent(partner)).to.equal(null);
    expect(report.warnings).to.include(
      '1 reversal row reverse no execution of an intent on record (line 3): nothing was completed or flagged for it; ' +
        "1 of them carry no reference of ours, and this partner's own reference repeats (match.partnerReferenceUnique false), " +
        'so they are not tied by it: find the execution each reverses by hand',
    );
    for (const id of [a, b]) expect((await intentRow(fx.sql, id)).status).to.equal('completed');
  });

  it('with a partner reference that is unique (the default), the same chargeback is tied by it', async () => {
    const partner = partnerName('cielo');
    const a = await stuck(partner, 'order-A', '25.00', '2026-11-30T13:00:00Z');
    const sale = cieloFile(fx.dir, `${partner}_sale.txt`, [
      ro('0000001', '01'),
      cv({ roNumber: '0000001', sign: '+', cents: 2500, nsu: '000101', reference: 'order-A' }),
    ]);
    const unique = (file: string): ReconcilerConfig => ({
      ...config(partner, file),
      match: { by: 'reference' },
    });
    await reconcile({ pool: fx.sql, reconciler: unique(sale), file: sale });
    const file = chargeback(partner, '');
    const [report] = await reconcile({ pool: fx.sql, reconciler: unique(file), file });
    expect(report.status, `error: ${report.error}`).to.equal('succeeded');
    expect(await reversalIntent(partner)).to.equal(a);
  });

  it('match.partnerReferenceUnique must be a boolean, and only for matching by reference', () => {
    const bad = (match: unknown) => ({ ...config('p', 'f.txt'), match }) as ReconcilerConfig;
    expect(() => validateReconciler(bad({ by: 'reference', partnerReferenceUnique: 'no' }), 'p.ts'))
      .to.throw()
      .with.property('message')
      .that.contains('match.partnerReferenceUnique must be true or false (got "no")');
    expect(() => validateReconciler(bad({ by: 'partnerReference', partnerReferenceUnique: false }), 'p.ts'))
      .to.throw()
      .with.property('message')
      .that.contains('match.partnerReferenceUnique applies to matching by reference');
    expect(() => resolveRunSettings(bad({ by: 'reference', partnerReferenceUnique: 0 })))
      .to.throw(RangeError)
      .with.property('message')
      .that.contains('match.partnerReferenceUnique must be true or false');
    expect(resolveRunSettings(bad({ by: 'reference', partnerReferenceUnique: true })).match).to.deep.equal({
      by: 'reference',
    });
  });
});
