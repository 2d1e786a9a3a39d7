import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { MatchRule } from '../../src/reconcile/reconcilerConfig.js';
import { csvReconciler, dbNow, minutes, partnerName, useReconcileFixture } from './support.js';

/**
 * Model-based: a ground truth (intents, and how often the partner really executed each: never, once or
 * twice), a report written from it with random defects, a reconciliation, and the promises checked against
 * the truth, not against the engine's own idea of it:
 *
 * - no intent the partner executed ends `not_executed` (it would be charged again);
 * - no intent the partner did not execute ends `completed` (it would never be collected);
 * - an intent has at most one `duplicate_execution`, and one executed twice that ends `completed` with both
 *   its rows accepted has one, unless its second row is in front of a person another way: an
 *   `ambiguous_match` (the row could also be another intent's, e.g. a retry sharing its reference) or an
 *   orphan (by amount, the partner's clock pushed it out of the match window).
 *
 * Defects: rows duplicated, shuffled, another partner's rows mixed in, the partner's clock up to 12 minutes
 * off, a time-zone mistake (every row three hours off; reference matching only, see below), rows dated in
 * the future, and files that lost rows
 * (cut at a line end, or a partial file) which then declare nothing (only a declared period proves absence:
 * a file that says it is complete and is not, is a lie no reconciler can see through without a trailer's
 * count). References are sometimes shared (a declined order retried under a new key), and some partners are
 * matched by amount and time. 200 cases in `npm test`; `PROOF_RUNS=5000 npm test` for the longer run whose
 * figures docs/RELIABILITY.md gives. Reversals (refunds) need row kinds and are not generated yet.
 */
describe('reconcile: proofs hold against generated reports (fast-check)', function () {
  this.timeout(1_200_000);
  const fx = useReconcileFixture('rec_props');
  const runs = Number(process.env.PROOF_RUNS ?? 200);

  const intentArb = fc.record({
    executions: fc.constantFrom(0, 0, 1, 1, 1, 2),
    startMinute: fc.integer({ min: 30, max: 380 }),
    amount: fc.constantFrom('10.00', '25.50', '99.99'),
    /** Shares the reference of the previous intent (a retry under a new key). */
    sharesReference: fc.integer({ min: 0, max: 9 }).map((n) => n < 3),
    /** Minutes between the attempt's start and the execution the partner reports. */
    lagMinutes: fc.integer({ min: 0, max: 5 }),
  });

  const caseArb = fc.record({
    intents: fc.array(intentArb, { minLength: 1, maxLength: 7 }),
    byAmount: fc.boolean(),
    duplicateRows: fc.boolean(),
    shuffle: fc.boolean(),
    foreignRows: fc.nat(3),
    clockSkewMinutes: fc.integer({ min: -12, max: 12 }),
    timeZoneMistake: fc.boolean(),
    futureRows: fc.nat(2),
    lostRows: fc.constantFrom('none', 'none', 'cut', 'partial'),
  });

  it(`${runs} generated reports: executed never not_executed, unexecuted never completed, doubles flagged once`, async () => {
    const now = await dbNow(fx.sql);
    const base = minutes(now, -10 * 60);
    let caseNo = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        caseNo += 1;
        const partner = partnerName(`prop${caseNo}`);
        // The ground truth, inserted as stuck intents (unknown, lease ended an hour ago).
        const truth: { id: string; reference: string; amount: string; executions: number }[] = [];
        for (const [n, intent] of c.intents.entries()) {
          const reference =
            intent.sharesReference && n > 0 && !c.byAmount ? truth[n - 1].reference : `${partner}-r${n}`;
          const started = minutes(base, intent.startMinute);
          const inserted = await fx.sql.query<{ id: string }>(
            `INSERT INTO intents (partner, operation, key, fingerprint, reference, amount, currency, status,
                                  attempt, lease_expires_at, created_at, attempt_started_at, resolved_by)
             VALUES ($1, 'charge', $2, 'fp', $3, $4, 'BRL', 'unknown', 1, now() - interval '1 hour', $5, $5,
                     'caller')
             RETURNING id`,
            [partner, `${partner}-k${n}`, reference, intent.amount, started],
          );
          truth.push({
            id: inserted.rows[0].id,
            reference,
            amount: intent.amount,
            executions: intent.executions,
          });
        }
        // The partner's rows for what it really did.
        type Row = { reference: string; nsu: string; amount: string; at: Date; ours?: string };
        let rows: Row[] = [];
        for (const [n, intent] of c.intents.entries()) {
          for (let e = 0; e < intent.executions; e++) {
            const at = minutes(base, intent.startMinute + intent.lagMinutes + e + c.clockSkewMinutes);
            rows.push({
              reference: c.byAmount ? '' : truth[n].reference,
              nsu: `${partner}-n${n}-${e}`,
              amount: intent.amount,
              at,
              ours: truth[n].id,
            });
          }
        }
        for (let f = 0; f < c.foreignRows; f++) {
          // Another partner's rows: their references, amounts none of ours has.
          rows.push({
            reference: `theirs-${f}`,
            nsu: `X-${caseNo}-${f}`,
            amount: '777.77',
            at: minutes(base, 60 * f),
          });
        }
        // Matching by amount and time cannot see through a time-zone mistake (every row lands near some other
        // intent's time): there, the reconciler's `timezone` must be right (README, docs/RELIABILITY.md).
        if (c.timeZoneMistake && !c.byAmount)
          rows = rows.map((row) => ({ ...row, at: minutes(row.at, 180) }));
        for (let f = 0; f < c.futureRows; f++) {
          rows.push({
            reference: `future-${f}`,
            nsu: `F-${caseNo}-${f}`,
            amount: '1.00',
            at: minutes(now, 120 + f),
          });
        }
        if (c.duplicateRows && rows.length > 0) rows.push({ ...rows[0] });
        if (c.shuffle) rows.sort((a, b) => (a.nsu < b.nsu ? 1 : -1));
        const complete = c.lostRows === 'none';
        if (c.lostRows === 'cut') rows = rows.slice(0, Math.floor(rows.length / 2));
        if (c.lostRows === 'partial')
          rows = rows.filter((row) => row.at.getTime() < minutes(base, 200).getTime());

        const file = join(fx.dir, `${partner}.csv`);
        const lines = ['reference,nsu,amount,currency,executed_at'];
        for (const row of rows)
          lines.push([row.reference, row.nsu, row.amount, 'BRL', row.at.toISOString()].join(','));
        writeFileSync(file, `${lines.join('\n')}\n`);

        const match: MatchRule = c.byAmount
          ? { by: 'amount', amountTolerance: '0.00', timeWindow: '10m' }
          : { by: 'reference' };
        const [report] = await reconcile({
          pool: fx.sql,
          reconciler: csvReconciler(partner, file, {
            match,
            maxRejectedRatio: 1,
            // A complete file declares the day it covers; one that lost rows declares nothing.
            ...(complete ? { coverage: { from: base, to: minutes(base, 480) } } : {}),
          }),
        });
        expect(report.status, report.error ?? '').to.equal('succeeded');

        const outcome = await fx.sql.query<{ id: string; status: string; duplicates: number }>(
          `SELECT i.id, i.status,
                  (SELECT count(*)::int FROM discrepancies d
                    WHERE d.intent_id = i.id AND d.kind = 'duplicate_execution') AS duplicates
             FROM intents i WHERE i.partner = $1`,
          [partner],
        );
        const flagged = await fx.sql.query<{ kind: string; partner_reference: string }>(
          `SELECT kind, partner_reference FROM discrepancies WHERE partner = $1`,
          [partner],
        );
        const inFrontOfAPerson = new Set(
          flagged.rows
            .filter((d) => d.kind === 'orphan_partner_record' || d.kind === 'ambiguous_match')
            .map((d) => d.partner_reference),
        );
        const accepted = new Set(rows.map((row) => row.nsu));
        const rejectedLines = new Set(report.rejected.map((r) => r.line));
        for (const intent of truth) {
          const found = outcome.rows.find((row) => row.id === intent.id)!;
          const context = JSON.stringify({ c, intent, status: found.status, warnings: report.warnings });
          if (intent.executions > 0) expect(found.status, context).to.not.equal('not_executed');
          if (intent.executions === 0) expect(found.status, context).to.not.equal('completed');
          const bothRowsAccepted =
            rejectedLines.size === 0 &&
            rows.filter((row) => row.ours === intent.id && accepted.has(row.nsu)).length >= 2;
          expect(found.duplicates, context).to.be.at.most(1);
          if (
            intent.executions === 2 &&
            found.status === 'completed' &&
            bothRowsAccepted &&
            found.duplicates === 0
          ) {
            const own = rows.filter((row) => row.ours === intent.id).map((row) => row.nsu);
            expect(
              own.filter((nsu) => inFrontOfAPerson.has(nsu)),
              context,
            ).to.have.length.at.least(1);
          }
        }
      }),
      { numRuns: runs, endOnFailure: true },
    );
  });
});
