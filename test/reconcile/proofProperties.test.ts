import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { MatchRule, ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
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
 * matched by amount and time.
 *
 * Rows of other kinds name the intents too: a refund of an execution, a fee, a declined try, and a refund
 * whose sale is in another file (the report shows the intent only through it). None is an execution: the
 * truth counts sales only. Some reports are written in a record layout (section header `S` declaring the
 * period, `H` header, `D` rows, section count `C`, file end `E` with its count, `coverage: { fromReport }`),
 * and lose rows there the way files do: cut short (the end and counts gone with them), or split over two
 * files (the section's count in the next one, so this file's section is never closed).
 *
 * 200 cases in `npm test`; `PROOF_RUNS=5000 npm test` for the longer run whose figures docs/RELIABILITY.md
 * gives.
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
    /** A row of another kind naming the intent; `saleElsewhere`: its sale is in another file, its refund here. */
    other: fc.constantFrom('none', 'none', 'refund', 'fee', 'declined', 'saleElsewhere'),
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
    layout: fc.constantFrom('plain', 'plain', 'records'),
  });

  /** The rule both layouts read the `kind` column with. */
  const KINDS = {
    column: 'kind',
    values: { sale: 'execution', refund: 'reversal', fee: 'ignored', declined: 'failed' },
  } as const;

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
        type Row = {
          reference: string;
          nsu: string;
          amount: string;
          at: Date;
          kind: keyof typeof KINDS.values;
          /** The intent a sale row is an execution of. */
          ours?: string;
        };
        let rows: Row[] = [];
        for (const [n, intent] of c.intents.entries()) {
          const reference = c.byAmount ? '' : truth[n].reference;
          const executedAt = (e: number) =>
            minutes(base, intent.startMinute + intent.lagMinutes + e + c.clockSkewMinutes);
          const elsewhere = intent.other === 'saleElsewhere' && intent.executions > 0;
          for (let e = 0; e < intent.executions && !elsewhere; e++) {
            rows.push({
              reference,
              nsu: `${partner}-n${n}-${e}`,
              amount: intent.amount,
              at: executedAt(e),
              kind: 'sale',
              ours: truth[n].id,
            });
          }
          const other = { reference, at: executedAt(3) };
          if ((intent.other === 'refund' || elsewhere) && intent.executions > 0)
            rows.push({ ...other, nsu: `${partner}-n${n}-rf`, amount: `-${intent.amount}`, kind: 'refund' });
          if (intent.other === 'fee')
            rows.push({ ...other, nsu: `${partner}-n${n}-fee`, amount: '-0.50', kind: 'fee' });
          if (intent.other === 'declined')
            rows.push({ ...other, nsu: `${partner}-n${n}-dc`, amount: intent.amount, kind: 'declined' });
        }
        for (let f = 0; f < c.foreignRows; f++) {
          // Another partner's rows: their references, amounts none of ours has.
          rows.push({
            reference: `theirs-${f}`,
            nsu: `X-${caseNo}-${f}`,
            amount: '777.77',
            at: minutes(base, 60 * f),
            kind: 'sale',
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
            kind: 'sale',
          });
        }
        if (c.duplicateRows && rows.length > 0) rows.push({ ...rows[0] });
        if (c.shuffle) rows.sort((a, b) => (a.nsu < b.nsu ? 1 : -1));
        const complete = c.lostRows === 'none';
        const records = c.layout === 'records';
        const cells = (row: Row) =>
          [row.reference, row.nsu, row.amount, 'BRL', row.at.toISOString(), row.kind].join(',');
        const file = join(fx.dir, `${partner}.csv`);
        if (!records) {
          if (c.lostRows === 'cut') rows = rows.slice(0, Math.floor(rows.length / 2));
          if (c.lostRows === 'partial')
            rows = rows.filter((row) => row.at.getTime() < minutes(base, 200).getTime());
          const lines = ['reference,nsu,amount,currency,executed_at,kind', ...rows.map(cells)];
          writeFileSync(file, `${lines.join('\n')}\n`);
        } else {
          // The section declares the whole day; what the file holds of it depends on how it was lost.
          const section = `S,${base.toISOString()},${minutes(base, 480).toISOString()}`;
          const header = 'H,reference,nsu,amount,currency,executed_at,kind';
          let lines: string[];
          if (c.lostRows === 'cut') {
            // Cut in transit: the second half of the rows, the count and the end are gone.
            rows = rows.slice(0, Math.floor(rows.length / 2));
            lines = [section, header, ...rows.map((row) => `D,${cells(row)}`)];
          } else if (c.lostRows === 'partial') {
            // The day split over two files: this one ends with its own end and count, its section is
            // closed in the next file, which holds the rest of the rows.
            rows = rows.filter((row) => row.at.getTime() < minutes(base, 200).getTime());
            lines = [section, header, ...rows.map((row) => `D,${cells(row)}`), `E,${rows.length}`];
          } else {
            lines = [
              section,
              header,
              ...rows.map((row) => `D,${cells(row)}`),
              `C,${rows.length}`,
              `E,${rows.length}`,
            ];
          }
          writeFileSync(file, `${lines.join('\n')}\n`);
        }

        const match: MatchRule = c.byAmount
          ? { by: 'amount', amountTolerance: '0.00', timeWindow: '10m' }
          : { by: 'reference' };
        const plain = csvReconciler(partner, file, {
          match,
          maxRejectedRatio: 1,
          // A complete file declares the day it covers; one that lost rows declares nothing.
          ...(complete ? { coverage: { from: base, to: minutes(base, 480) } } : {}),
        });
        const source = plain.source as CsvSourceConfig;
        const reconciler: ReconcilerConfig = records
          ? {
              ...plain,
              // The file says what it covers, whatever it lost: the layout must see through it.
              coverage: { fromReport: true },
              source: {
                ...source,
                kind: KINDS,
                records: {
                  header: 'H',
                  data: ['D'],
                  coverage: { record: 'S', from: 1, to: 2 },
                  counts: [
                    { record: 'C', position: 1, since: 'S' },
                    { record: 'E', position: 1 },
                  ],
                  end: 'E',
                },
              },
            }
          : { ...plain, source: { ...source, kind: KINDS } };
        const [report] = await reconcile({ pool: fx.sql, reconciler });
        // A file cut short fails as a whole (its end record is gone) and applies nothing.
        expect(report.status, report.error ?? '').to.equal(
          records && c.lostRows === 'cut' ? 'failed' : 'succeeded',
        );

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
