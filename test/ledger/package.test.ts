import { expect } from 'chai';

/**
 * The built entry point (what `main`/`exports` point at) loads with plain `require` and exposes the public
 * API with the stable error codes callers route on.
 */
describe('package entry point', () => {
  // biome-ignore lint/suspicious/noExplicitAny: the point is to load the compiled module untyped, as a JS caller would
  const api: Record<string, any> = require('../../src/index.js');

  it('exports createLedger, Ledger, Workflow, LeaseEndingError and the status vocabularies', () => {
    expect(api.createLedger).to.be.a('function');
    expect(api.Ledger).to.be.a('function');
    expect(api.Workflow).to.be.a('function');
    expect(api.LeaseEndingError).to.be.a('function');
    expect(api.defaultClassify).to.be.a('function');
    // What README "Scheduled reconciliation" tells a program to use (its maxConcurrentRuns, fire, stop).
    expect(api.ReconciliationWorker).to.be.a('function');
    expect(api.ReconciliationWorker.prototype.fire).to.be.a('function');
    expect(api.reconcile).to.be.a('function');
    expect(api.IntentStatus).to.deep.equal({
      InProgress: 'in_progress',
      Completed: 'completed',
      Rejected: 'rejected',
      NotExecuted: 'not_executed',
      Unknown: 'unknown',
    });
    expect(Object.values(api.DiscrepancyKind)).to.have.members([
      'duplicate_execution',
      'amount_mismatch',
      'currency_mismatch',
      'missing_at_partner',
      'orphan_partner_record',
      'unresolved',
      'late_completion',
      'ambiguous_match',
    ]);
  });

  it('exports every error class with its stable code, all LedgerErrors carrying their context', () => {
    const context = { partner: 'p', key: 'k', intentId: '7' };
    const errors = {
      IdempotencyKeyConflictError: [new api.IdempotencyKeyConflictError(context), 'IDEMPOTENCY_KEY_CONFLICT'],
      IntentInFlightError: [
        new api.IntentInFlightError({ ...context, leaseExpiresAt: new Date(0) }),
        'INTENT_IN_FLIGHT',
      ],
      IntentNotExecutedError: [
        new api.IntentNotExecutedError({ ...context, attempt: 1, detail: 'd' }),
        'INTENT_NOT_EXECUTED',
      ],
      IntentOutcomeUnknownError: [
        new api.IntentOutcomeUnknownError({ ...context, attempt: 1 }),
        'INTENT_OUTCOME_UNKNOWN',
      ],
      IntentRejectedError: [
        new api.IntentRejectedError({ ...context, reason: { message: 'no' }, replayed: false }),
        'INTENT_REJECTED',
      ],
      LateCompletionError: [
        new api.LateCompletionError({ ...context, attempt: 1, discrepancyId: null, settledAs: 'rejected' }),
        'LATE_COMPLETION',
      ],
      LedgerUnavailableError: [
        new api.LedgerUnavailableError({ ...context, during: 'claiming' }),
        'LEDGER_UNAVAILABLE',
      ],
    } as const;
    for (const [name, [error, code]] of Object.entries(errors)) {
      expect(error, name).to.be.instanceOf(api.LedgerError);
      expect(error, name).to.be.instanceOf(Error);
      expect(error, name).to.include({ name, code, partner: 'p', key: 'k', intentId: '7' });
      expect(error.message, name).to.be.a('string').and.not.equal('');
    }
    expect(new api.DatabaseNotConfiguredError()).to.be.instanceOf(api.LedgerError);
    expect(new api.DatabaseNotConfiguredError()).to.include({ code: 'DATABASE_NOT_CONFIGURED' });
    expect(new api.LedgerClosedError({ ...context, method: 'run' })).to.include({
      code: 'LEDGER_CLOSED',
      partner: 'p',
      key: 'k',
    });
    expect(new api.SchemaTooNewError({ unknownMigrations: ['X1'], newestKnown: 'Y0' })).to.include({
      code: 'SCHEMA_TOO_NEW',
    });
    expect(new api.PartnerRejected('declined', { code: '51' })).to.include({
      name: 'PartnerRejected',
      partnerCode: '51',
    });
    expect(new api.PartnerNotExecuted('offline')).to.include({
      name: 'PartnerNotExecuted',
      message: 'offline',
    });
  });
});
