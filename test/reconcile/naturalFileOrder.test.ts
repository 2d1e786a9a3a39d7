import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { expandReportFiles } from '../../src/reconcile/expandReportFiles.js';
import { compareFileNames } from '../../src/reconcile/naturalFileOrder.js';

/**
 * Report files are applied in the order a person numbers them: a refund is tied to its payment only when the
 * payment's batch was read first, so `batch_10` must not run before `batch_9`.
 */
describe('report files in natural name order', () => {
  it('numbers by value, dates as they were, the rest by code unit; a total order', () => {
    const names = [
      'settlement_detail_report_batch_10.csv',
      'settlement_detail_report_batch_9.csv',
      'settlement_detail_report_batch_100.csv',
      'settlement_detail_report_batch_09.csv',
      '2026-11-28.csv',
      '2026-11-3.csv',
      '2026-12-01.csv',
      'b.csv',
      'B.csv',
      'a99999999999999999999999.csv',
      'a100000000000000000000000.csv',
    ];
    expect([...names].sort(compareFileNames)).to.deep.equal([
      '2026-11-3.csv',
      '2026-11-28.csv',
      '2026-12-01.csv',
      'B.csv',
      'a99999999999999999999999.csv',
      'a100000000000000000000000.csv',
      'b.csv',
      'settlement_detail_report_batch_09.csv',
      'settlement_detail_report_batch_9.csv',
      'settlement_detail_report_batch_10.csv',
      'settlement_detail_report_batch_100.csv',
    ]);
    for (const a of names)
      for (const b of names)
        expect(Math.sign(compareFileNames(a, b))).to.equal(-Math.sign(compareFileNames(b, a)));
  });

  it('a glob over a folder yields the batches in that order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'natural-order-'));
    try {
      mkdirSync(join(dir, 'adyen'));
      for (const n of [10, 2, 1, 11]) writeFileSync(join(dir, 'adyen', `batch_${n}.csv`), 'x\n');
      expect(await expandReportFiles(join(dir, 'adyen', '*.csv'))).to.deep.equal(
        [1, 2, 10, 11].map((n) => join(dir, 'adyen', `batch_${n}.csv`)),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
