import type { Queryable } from '../database/queryable.js';

/**
 * For a partner whose own references repeat (`match.partnerReferenceUnique: false`: Cielo's NSU numbers the
 * sales of one day), takes out of `rec_known` the rows whose stored record has their identity but was
 * executed on another day, gives each of them an identity qualified by its day (`<base>@<YYYY-MM-DD>#<n>`),
 * and finds the records stored under that identity instead. Returns how many rows `rec_known` lost and how
 * many it found again.
 *
 * Why: a row's identity (identifyRows.ts) is its partner reference and our reference, with no day. A sale of
 * the same order under the same NSU on another day (the NSU came round again and the order was charged again)
 * had the identity of the first sale and was taken for a re-read of it: dropped, a second charge nobody was
 * told about. For such a partner the same NSU and order on the same day is the same sale, on another day
 * another one. Only these collisions are qualified: every identity stored before stays what it was, so a
 * re-read of any earlier file still finds its records; and a re-run meets the same collision and finds the
 * record stored under the qualified identity. A row without an execution time cannot be told apart and
 * stays a re-read. The day is the execution's calendar day in the reconciler's time zone, where the
 * partner's numbering restarts.
 *
 * Runs right after findKnownRecords, under the partner's reconciliation lock. The rows it looks up again are
 * the few collisions, each by one probe of the unique (partner, identity) index.
 */
export async function separateReusedReferences(
  db: Queryable,
  input: { partner: string; timezone: string },
): Promise<{ reused: number; found: number }> {
  await db.query('CREATE TEMP TABLE rec_reused (line integer NOT NULL) ON COMMIT DROP');
  const reused = await db.query(
    `WITH moved AS (
       DELETE FROM rec_known k
        USING rec_report r
        WHERE r.line = k.report_line
          AND (k.executed_at AT TIME ZONE $1)::date <> (r.executed_at AT TIME ZONE $1)::date
       RETURNING k.report_line)
     INSERT INTO rec_reused SELECT report_line FROM moved`,
    [input.timezone],
  );
  const count = reused.rowCount ?? 0;
  if (count === 0) return { reused: 0, found: 0 };
  await db.query(
    `UPDATE rec_report r
        SET identity = regexp_replace(r.identity, '#([0-9]+)$',
                                      '@' || to_char(r.executed_at AT TIME ZONE $1, 'YYYY-MM-DD') || '#\\1')
       FROM rec_reused u
      WHERE r.line = u.line`,
    [input.timezone],
  );
  const found = await db.query(
    `INSERT INTO rec_known
     SELECT r.line, pr.id, pr.identity, pr.line, pr.run_id, pr.reference, pr.partner_reference, pr.amount,
            pr.currency, pr.executed_at, pr.intent_id
       FROM rec_reused u
       JOIN rec_report r ON r.line = u.line
      CROSS JOIN LATERAL (SELECT * FROM partner_records pr
                           WHERE pr.partner = $1 AND pr.identity = r.identity OFFSET 0) pr`,
    [input.partner],
  );
  await db.query('ANALYZE rec_known');
  return { reused: count, found: found.rowCount ?? 0 };
}
