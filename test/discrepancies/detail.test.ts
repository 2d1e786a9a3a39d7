import { expect } from 'chai';
import type { Pool } from 'pg';
import { DiscrepancyNotFoundError } from '../../src/discrepancies/errors/DiscrepancyNotFoundError.js';
import { getDiscrepancy, requireDiscrepancy } from '../../src/discrepancies/getDiscrepancy.js';
import { reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { PartnerNotExecuted } from '../../src/shared/errors/index.js';
import { rejectionOf, specFactory, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';
import { insertPartnerRecord, insertRun, raise } from './seed.js';

describe('discrepancy detail', () => {
  const db = useFreshDatabase('disc_detail');
  const spec = specFactory('detail');
  let sql: Pool;
  let ledger: Ledger;
  before(async () => {
    sql = sqlPool(db.url);
    ledger = await testLedger(db.url);
  });
  after(async () => {
    await ledger.close();
    await sql.end();
  });

  it('has the intent with every attempt, the partner rows, the run and the history oldest first', async () => {
    const s = spec({ amount: '10.00', currency: 'BRL' });
    // Attempt 1: provably not executed; attempt 2: completed. Real attempts, through the ledger.
    await rejectionOf(
      ledger.run(s, async () => {
        throw new PartnerNotExecuted('acquirer said 503 before accepting');
      }),
    );
    const completed = await ledger.run(s, async () => ({
      partnerReference: 'NSU-2',
      response: { ok: true },
    }));
    expect(completed.attempt).to.equal(2);

    // The first execution came in an earlier report: each row shows the file of its own run.
    const earlierRunId = await insertRun(sql, 'acme-pay', 'settlement-2024-04-30.csv');
    const runId = await insertRun(sql);
    const first = await insertPartnerRecord(sql, {
      runId: earlierRunId,
      line: 7,
      reference: s.reference!,
      partnerReference: 'NSU-2',
      amount: '12.00',
    });
    const second = await insertPartnerRecord(sql, {
      runId,
      line: 9,
      reference: s.reference!,
      partnerReference: 'NSU-2b',
      amount: '12.00',
    });
    const id = await raise(sql, {
      kind: 'duplicate_execution',
      intentId: completed.intentId,
      attempt: 2,
      runId,
      reference: s.reference!,
      partnerReference: 'NSU-2',
      amountAtRisk: '12.00',
      summary: 'acme-pay executed order twice',
      details: { lines: [7, 9] },
    });
    // raiseDiscrepancy does not take partner record ids (yet): the reconciler sets them.
    await sql.query('UPDATE discrepancies SET partner_record_ids = $2 WHERE id = $1', [id, [second, first]]);
    await reviewDiscrepancies(sql, [id], 'acknowledge', { note: 'asking acme for a refund', by: 'alice' });

    const detail = (await getDiscrepancy(sql, id))!;
    expect(detail).to.include({
      id,
      kind: 'duplicate_execution',
      partner: 'acme-pay',
      status: 'acknowledged',
      reference: s.reference,
      partnerReference: 'NSU-2',
      amountAtRisk: '12.00',
      currency: 'BRL',
      summary: 'acme-pay executed order twice',
      intentId: completed.intentId,
      runId,
      attempt: 2,
    });
    expect(detail.details).to.deep.equal({ lines: [7, 9] });

    expect(detail.intent).to.include({
      id: completed.intentId,
      key: s.key,
      status: 'completed',
      attempt: 2,
      partnerReference: 'NSU-2',
      amount: '10.00',
    });
    expect(detail.intent!.attempts.map((a) => [a.attempt, a.outcome, a.partnerReference])).to.deep.equal([
      [1, 'not_executed', null],
      [2, 'completed', 'NSU-2'],
    ]);

    expect(detail.partnerRecords).to.deep.equal([
      {
        id: first,
        source: 'settlement-2024-04-30.csv',
        line: 7,
        reference: s.reference,
        partnerReference: 'NSU-2',
        amount: '12.00',
        currency: 'BRL',
        executedAt: new Date('2024-05-01T10:00:00Z'),
        runId: earlierRunId,
        settlementAmount: null,
        settlementCurrency: null,
      },
      {
        id: second,
        source: 'settlement-2024-05-01.csv',
        line: 9,
        reference: s.reference,
        partnerReference: 'NSU-2b',
        amount: '12.00',
        currency: 'BRL',
        executedAt: new Date('2024-05-01T10:00:00Z'),
        runId,
        settlementAmount: null,
        settlementCurrency: null,
      },
    ]);
    expect(detail.run).to.deep.equal({
      id: runId,
      partner: 'acme-pay',
      source: 'settlement-2024-05-01.csv',
      status: 'succeeded',
      startedAt: new Date('2024-05-02T03:00:00Z'),
      finishedAt: new Date('2024-05-02T03:00:05Z'),
      error: null,
    });
    expect(detail.history.map((h) => [h.fromStatus, h.toStatus, h.actor, h.note])).to.deep.equal([
      [null, 'open', 'reconciler', 'acme-pay executed order twice'],
      ['open', 'acknowledged', 'alice', 'asking acme for a refund'],
    ]);
  });

  it('a discrepancy without intent, rows or run has null / empty for them', async () => {
    const id = await raise(sql, { kind: 'orphan_partner_record' });
    const detail = (await getDiscrepancy(sql, id))!;
    expect(detail.intent).to.equal(null);
    expect(detail.partnerRecords).to.deep.equal([]);
    expect(detail.run).to.equal(null);
    expect(detail.history).to.have.length(1);
  });

  it('null for an unknown id or something that is not an id; requireDiscrepancy throws DISCREPANCY_NOT_FOUND', async () => {
    expect(await getDiscrepancy(sql, '987654321')).to.equal(null);
    expect(await getDiscrepancy(sql, 'abc')).to.equal(null);
    expect(await getDiscrepancy(sql, '99999999999999999999999')).to.equal(null);
    const error = await rejectionOf(requireDiscrepancy(sql, '987654321'));
    expect(error).to.be.instanceOf(DiscrepancyNotFoundError);
    expect((error as DiscrepancyNotFoundError).code).to.equal('DISCREPANCY_NOT_FOUND');
  });
});
