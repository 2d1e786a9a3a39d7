/**
 * SQL: the columns DECIDE (matchRows.ts) reads of a candidate pairing, for report row `row` (an alias with
 * `partner_reference`; its execution time is the SQL `executedAt`) and intent `i`, with the clock skew `skew`
 * (a parameter, in milliseconds):
 * - `completed`: the intent was completed when matched. It travels with a match into `rec_report`
 *   (`intent_completed`): `completed` is final, so a row matched to an intent completed when it was matched
 *   can never be an orphan, and flagOrphans reads the statuses of the other matched intents only
 *   (docs/PERFORMANCE.md, "Fewer passes over every row");
 * - `pinned`: the intent's known partner reference is the row's;
 * - `excluded`: the row cannot be the intent's (another known partner reference, or the intent was created
 *   longer than the clock skew after the execution);
 * - `dead`: the intent is `rejected` or `not_executed`.
 */
export function candidateColumns(row: string, executedAt: string, skew: string): string {
  return `i.status = 'completed' AS completed,
          (${row}.partner_reference IS NOT NULL AND i.partner_reference = ${row}.partner_reference) AS pinned,
          ((${row}.partner_reference IS NOT NULL AND i.partner_reference IS NOT NULL
            AND i.partner_reference <> ${row}.partner_reference)
           OR i.created_at > ${executedAt} + ${skew}::bigint * interval '1 millisecond') IS TRUE AS excluded,
          i.status IN ('rejected', 'not_executed') AS dead`;
}
