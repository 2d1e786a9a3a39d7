/**
 * The four-eyes thresholds (migration 0016): above its currency's threshold, resolving or dismissing a
 * discrepancy needs a second resolver's approval, whichever program asks (the review site, the CLI, a program
 * calling {@link reviewDiscrepancies}); a trigger in the database refuses it otherwise. A threshold is set per
 * ISO 4217 currency, or for `*` (every currency without its own). Nothing set means four eyes is off.
 *
 * Changes are appended, never overwritten, so who set which threshold when stays readable.
 */
import type { Queryable } from '../database/queryable.js';
import { NoteRequiredError } from './errors/NoteRequiredError.js';

/** `*`: the threshold for every currency that has none of its own. */
export const ANY_CURRENCY = '*';

export interface ApprovalThreshold {
  /** An ISO 4217 code, or `*`. */
  currency: string;
  /** Decimal string, in that currency's major units; amounts at risk strictly above it need approval. */
  threshold: string;
  setBy: string;
  note: string;
  setAt: Date;
}

/**
 * Sets (or with `threshold: null` removes) the threshold of `currency` (default `*`). Refuses (RangeError) a
 * threshold that is not a non-negative decimal string or a currency that is not three letters or `*`.
 */
export async function setApprovalThreshold(
  db: Queryable,
  input: { currency?: string; threshold: string | null; by: string; note: string },
): Promise<void> {
  const currency = (input.currency ?? ANY_CURRENCY).trim().toUpperCase();
  if (currency !== ANY_CURRENCY && !/^[A-Z]{3}$/.test(currency))
    throw new RangeError(
      `currency must be a 3-letter ISO 4217 code or "*", got ${JSON.stringify(input.currency)}`,
    );
  if (input.threshold !== null && !/^\d+(\.\d+)?$/.test(input.threshold))
    throw new RangeError(
      `the threshold must be a non-negative decimal such as "10000.00", got ${JSON.stringify(input.threshold)}`,
    );
  const note = input.note.trim();
  if (!note) throw new NoteRequiredError('set an approval threshold');
  const by = input.by.trim();
  if (!by) throw new RangeError('who sets the threshold is required');
  await db.query(
    'INSERT INTO approval_thresholds (currency, threshold, set_by, note) VALUES ($1, $2::numeric, $3, $4)',
    [currency, input.threshold, by, note],
  );
}

/** The thresholds in force, `*` first, then by currency. */
export async function currentApprovalThresholds(db: Queryable): Promise<ApprovalThreshold[]> {
  const result = await db.query<{
    currency: string;
    threshold: string;
    set_by: string;
    note: string;
    set_at: Date;
  }>(
    `SELECT currency, threshold::text AS threshold, set_by, note, set_at
       FROM (SELECT DISTINCT ON (currency) * FROM approval_thresholds ORDER BY currency, id DESC) latest
      WHERE threshold IS NOT NULL
      ORDER BY currency <> '*', currency`,
  );
  return result.rows.map((row) => ({
    currency: row.currency,
    threshold: row.threshold,
    setBy: row.set_by,
    note: row.note,
    setAt: row.set_at,
  }));
}
