import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { resolveRunSettings } from '../../src/reconcile/runSettings.js';
import { validateReconciler } from '../../src/reconcile/validateReconciler.js';
import {
  csvReconciler,
  dbNow,
  intentRow,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
  writeCsv,
} from './support.js';

/**
 * A partner writes the matched value in one form (Twilio: the recipient in E.164). An intent recorded in
 * another form (`11 98765-4321`) is never in its report as it is, so the report's silence about it proves
 * nothing: proven not executed, the SMS would be sent again. `match.shape` says the form; such an intent stays
 * stuck and the run's warnings count it.
 */
describe('reconcile: match.shape, the form a partner reports the matched value in', () => {
  const fx = useReconcileFixture('rec_shape');
  const E164 = '^(whatsapp:)?\\+[1-9][0-9]{1,14}$';

  it('an intent outside the shape is never proven absent, and the warnings count it; one inside is', async () => {
    const base = minutes(await dbNow(fx.sql), -10 * 60);
    const at = (m: number) => minutes(base, m);
    const partner = partnerName('shape');
    const stuck = async (reference: string, m: number) => {
      const id = await unknownIntent(fx.ledger, spec(partner, reference, { key: `${reference}:sms` }));
      await place(fx.sql, id, { startedAt: at(m) });
      return id;
    };
    const sent = await stuck('+5511987654321', 100);
    const absent = await stuck('+5511900000001', 110);
    const national = await stuck('11 98765-4321', 120);
    const whatsapp = await stuck('whatsapp:+5511900000002', 130);
    const file = writeCsv(fx.dir, `${partner}.csv`, [
      { reference: '+5511987654321', nsu: 'SM1', amount: '10.00', executedAt: at(101) },
    ]);
    const [report] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file, {
        match: { by: 'reference', shape: E164 },
        coverage: { from: at(0), to: at(480) },
      }),
    });
    expect(report.status, String(report.error)).to.equal('succeeded');
    expect((await intentRow(fx.sql, sent)).status).to.equal('completed');
    expect((await intentRow(fx.sql, absent)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, whatsapp)).status).to.equal('not_executed');
    expect((await intentRow(fx.sql, national)).status, 'written otherwise: proves nothing').to.equal(
      'unknown',
    );
    expect(report.resolved).to.deep.equal({ completed: 1, notExecuted: 2 });
    expect(report.warnings).to.include(
      `1 stuck intents have a reference this partner never reports in that form (match.shape ${E164}): none of ` +
        'them can be proven absent; record the value as the partner writes it',
    );
  });

  it('refuses a shape that is not anchored at both ends or not a regular expression, and one under amount matching', () => {
    for (const [shape, message] of [
      ['\\+[0-9]+', 'anchored at both ends'],
      ['^\\+[0-9]+', 'anchored at both ends'],
      ['^(+$', 'is not a regular expression'],
    ] as const) {
      expect(() => resolveRunSettings(csvReconciler('p', 'f.csv', { match: { by: 'reference', shape } })))
        .to.throw(RangeError)
        .with.property('message')
        .that.contains(message);
      expect(() =>
        validateReconciler(csvReconciler('p', 'f.csv', { match: { by: 'reference', shape } }), 'p.ts'),
      )
        .to.throw()
        .with.property('message')
        .that.contains(message);
    }
    const amount = { match: { by: 'amount', shape: E164 } } as never;
    expect(() => validateReconciler(csvReconciler('p', 'f.csv', amount), 'p.ts'))
      .to.throw()
      .with.property('message')
      .that.contains('match.shape applies to matching by reference or partnerReference');
  });
});
