import { expect } from 'chai';
import { LedgerClosedError } from '../../src/shared/errors/LedgerClosedError.js';
import { LedgerError } from '../../src/shared/errors/LedgerError.js';
import { rejectionOf, specFactory } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

const spec = specFactory('closed');

/** After close(), each method answers with the one LedgerClosedError (code LEDGER_CLOSED), never a pool error. */
describe('a closed ledger throws LedgerClosedError from every method', function () {
  this.timeout(15_000);
  const db = useFreshDatabase('closed');

  it('run, begin, complete, reject, notExecuted, unknown, get, inbox, workflow, purge; close again is a no-op', async () => {
    const ledger = await testLedger(db.url);
    const s = spec();
    const held = await ledger.begin(s);
    if (held.kind !== 'claimed') throw new Error('expected a claim');
    await ledger.close();

    let calls = 0;
    const attempts: [string, () => unknown][] = [
      ['run', () => ledger.run(spec(), async () => ({ partnerReference: String(++calls) }))],
      ['begin', () => ledger.begin(spec())],
      ['complete', () => ledger.complete(held.intentId, held.attempt, { partnerReference: 'x' })],
      ['reject', () => ledger.reject(held.intentId, held.attempt, 'declined')],
      ['notExecuted', () => ledger.notExecuted(held.intentId, held.attempt, 'refused')],
      ['unknown', () => ledger.unknown(held.intentId, held.attempt, 'timeout')],
      ['get', () => ledger.get(s.partner, s.key)],
      ['inbox', () => ledger.inbox('consumer', 'message-1', async () => 1)],
      ['workflow', () => ledger.workflow('order-9')],
      ['purge', () => ledger.purge({ olderThan: '30d' })],
    ];
    for (const [method, call] of attempts) {
      const error = await rejectionOf(Promise.resolve().then(call));
      expect(error, method).to.be.instanceOf(LedgerClosedError);
      expect(error, method).to.be.instanceOf(LedgerError);
      expect(error, method).to.include({ code: 'LEDGER_CLOSED', name: 'LedgerClosedError', method });
      expect((error as Error).message, method).to.include(`${method}() was called after close()`);
    }
    expect(calls).to.equal(0);
    await ledger.close();
  });

  it('names the intent where the call does: run and get by partner/key, complete of a held claim too', async () => {
    const ledger = await testLedger(db.url);
    const held = await ledger.begin(spec());
    if (held.kind !== 'claimed') throw new Error('expected a claim');
    await ledger.close();
    const s = spec();
    const fromRun = await rejectionOf(ledger.run(s, async () => ({})));
    expect(fromRun).to.include({ partner: s.partner, key: s.key });
    expect((fromRun as Error).message).to.match(new RegExp(`^${s.partner}/${s.key}: the ledger is closed`));
    const fromGet = await rejectionOf(Promise.resolve().then(() => ledger.get('globex-sms', 'k-1')));
    expect(fromGet).to.include({ partner: 'globex-sms', key: 'k-1' });
    const fromComplete = await rejectionOf(
      Promise.resolve().then(() => ledger.complete(held.intentId, held.attempt, {})),
    );
    expect(fromComplete).to.include({ partner: 'acme-pay', key: held.key, intentId: held.intentId });
  });
});
