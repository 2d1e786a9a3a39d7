import type { Queryable } from '../database/queryable.js';
import type { RowKind } from '../reports/rowKind.js';
import type { ResolvedMatch } from './runSettings.js';

/** Accepted rows of a report by kind. */
type RowsByKind = Record<RowKind, number>;

export interface SeparatedRows {
  byKind: RowsByKind;
  /** Rows taken out of `rec_staged` (every kind but `execution`). */
  moved: number;
  /**
   * Failed rows with an identifier, now in `rec_rejected` too: they keep the intents they name from being
   * proven absent, as identified rejections do (collectCandidates needs to know there are some).
   */
  shielding: number;
  /** Why this run can prove no intent absent because of them, or null. */
  warning: string | null;
}

/**
 * Takes every row that is not an execution out of `rec_staged`, right after staging, into `rec_other`, so
 * that everything after (coverage, matching, evidence, duplicates, orphans, the plausibility of the report)
 * sees executions only: a refund is never a second execution, a fee never an orphan. What becomes of them:
 * - reversals and failed tries are stored at the end of the run (recordOtherRows), each with its intent;
 * - a failed try is the partner saying it did not execute, and is taken at its word only so far as it never
 *   completes anything. It does not prove its intent absent on its own either: like an identified
 *   rejection it is copied into `rec_rejected`, which shields the intent it names (the partner may list the
 *   try that failed and, elsewhere or later, the retry it executed). Under amount matching it could be any
 *   intent's, so the run then proves nothing absent (the `warning`);
 * - reversals and ignored rows that name an intent shield it the same way: a refund whose sale is in
 *   another file says the sale happened. A reversal or failed try that names no intent we know could be
 *   any stuck intent's (under amount matching a row carries no reference of ours; otherwise, one without a
 *   reference): unless its partner reference is an execution of this report or an intent's, the run then
 *   proves nothing absent (the `warning`);
 * - ignored rows (fees, payouts, inbound messages) are then counted and dropped.
 * `rowsStaged` is what staging accepted (StageResult.extent.rows), to count executions without a scan.
 */
export async function separateRowKinds(
  db: Queryable,
  input: { partner: string; rowsStaged: number; match: ResolvedMatch },
): Promise<SeparatedRows> {
  await db.query('CREATE TEMP TABLE rec_other (LIKE rec_staged) ON COMMIT DROP');
  await db.query(
    `WITH moved AS (DELETE FROM rec_staged WHERE kind IS NOT NULL RETURNING *)
     INSERT INTO rec_other SELECT * FROM moved`,
  );
  const counts = await db.query<{ kind: RowKind; rows: number }>(
    'SELECT kind, count(*)::int AS rows FROM rec_other GROUP BY kind',
  );
  const byKind: RowsByKind = { execution: 0, reversal: 0, failed: 0, ignored: 0 };
  let moved = 0;
  for (const { kind, rows } of counts.rows) {
    byKind[kind] = rows;
    moved += rows;
  }
  byKind.execution = input.rowsStaged - moved;
  // Any row naming an intent keeps it from being proven absent (invariant 9: no row of any kind could be its
  // execution): a refund of an order whose sale is in another file says the sale happened, a fee on it too.
  const shielded = await db.query(
    `INSERT INTO rec_rejected (line, reference, partner_reference)
     SELECT line, reference, partner_reference FROM rec_other
      WHERE reference IS NOT NULL OR partner_reference IS NOT NULL`,
  );
  await db.query(`DELETE FROM rec_other WHERE kind = 'ignored'`);
  // A partner reference that repeats (Cielo's NSU: match.partnerReferenceUnique false) names nobody for sure:
  // an intent that once had the same value is not this row's, so only our reference counts.
  const uniquePartnerReference = !(
    input.match.by === 'reference' && input.match.partnerReferenceUnique === false
  );
  const anonymous = await anonymousRows(
    db,
    input.partner,
    input.match.by === 'amount',
    uniquePartnerReference,
  );
  const warning =
    input.match.by === 'amount' && byKind.failed > 0
      ? `${byKind.failed} failed rows could be the try of any intent matched by amount: this run proves no intent absent`
      : anonymous > 0
        ? `${anonymous} reversal or failed rows name no intent we know and could be any intent's: this run proves no intent absent`
        : null;
  return { byKind, moved, shielding: shielded.rowCount ?? 0, warning };
}

/**
 * Reversals and failed tries that could be any stuck intent's: no reference of ours (any row under amount
 * matching, whose rows carry none we match by), and a partner reference that is neither an execution of this
 * report nor an intent's (or any partner reference at all, when the partner's repeats). Only these few rows are looked at, each by index.
 */
async function anonymousRows(
  db: Queryable,
  partner: string,
  byAmount: boolean,
  uniquePartnerReference: boolean,
): Promise<number> {
  const result = await db.query<{ rows: number }>(
    `SELECT count(*)::int AS rows FROM rec_other o
      WHERE o.kind IN ('reversal', 'failed') AND ($2 OR o.reference IS NULL)
        AND (o.partner_reference IS NULL OR NOT $3
             OR (NOT EXISTS (SELECT 1 FROM rec_staged s WHERE s.partner_reference = o.partner_reference)
                 AND NOT EXISTS (SELECT 1 FROM intents i
                                  WHERE i.partner = $1 AND i.partner_reference = o.partner_reference)))`,
    [partner, byAmount, uniquePartnerReference],
  );
  return result.rows[0]!.rows;
}
