import type { Queryable } from '../database/queryable.js';
import { IDENTITY_BASE } from './identifyRows.js';
import { probesTable } from './probeOrJoin.js';

/** Lines of reversals of nothing known that a warning lists; the count is always complete. */
const LISTED_LINES = 20;

/**
 * Stores the report's reversals and failed tries (`rec_other`, see separateRowKinds) in `partner_records`,
 * once every execution of the report is stored (applyReport), so a refund in the same file as its charge
 * finds it. Each is stored under the identity an execution would have, prefixed with its kind
 * (`reversal:<partner reference>|<reference>#<n>`), so it never collides with its own execution, which often
 * carries the same references, and a re-run stores nothing twice (`ON CONFLICT DO NOTHING`).
 *
 * `n` counts occurrences in the row's own file only, and a partner's refund or chargeback usually carries
 * the payment's references: a chargeback in one file and its reversal (or a second partial refund) in a later
 * one had the same identity, and the later one was taken for a re-read and never stored. A source that names
 * the row's own id (`columns.rowId`: Adyen's Modification Reference, Stripe's balance_transaction_id) puts it
 * in the identity (`reversal:<partner reference>|<reference>|id:<row id>#<n>`). Records stored before it did
 * are under the identity without it (the legacy one): a row whose legacy identity is stored with the same
 * kind, amount, currency and time is that record read again, and is not stored a second time.
 *
 * A reversal is tied to the execution it reverses: an execution record of the partner's intent with the
 * reversal's partner reference or reference, preferring one carrying the same partner reference, then the
 * same reference, then the first stored. It is stored with that intent (`intent_id`) and that record
 * (`reverses`), and is shown beside the execution on the intent's discrepancies. A reversal of nothing we
 * hold an execution for (a refund of a charge no intent asked for, or of one in a report never reconciled)
 * is stored without either, and the run says so in a warning with its lines: it completes, duplicates and
 * orphans nothing. A failed try is stored with the intent it names when exactly one intent has its reference
 * or partner reference.
 *
 * A partner whose own reference repeats (`match.partnerReferenceUnique: false`: Cielo's NSU numbers a
 * transaction within its day) ties by our reference only: a chargeback without our order code, tied by its
 * NSU, would land on whichever order had that NSU first. Such a row is stored untied, and the warning says
 * how many of the untied ones carry no reference of ours.
 *
 * Returns the warning, or null.
 */
export async function recordOtherRows(
  db: Queryable,
  input: { partner: string; runId: string; partnerReferenceUnique: boolean },
): Promise<string | null> {
  await db.query(
    `CREATE TEMP TABLE rec_other_tied ON COMMIT DROP AS
     WITH located AS (
       SELECT s.line, s.reference, s.partner_reference, s.amount, s.currency, s.executed_at, s.kind,
              s.settlement_amount, s.settlement_currency, s.row_id, s.kind || ':' || ${IDENTITY_BASE} AS legacy_base
         FROM (SELECT line, reference, partner_reference, amount, currency, kind, settlement_amount, settlement_currency,
                      row_id,
                      (timestamp 'epoch' + (executed_at_ms / 86400000) * interval '1 day'
                         + (executed_at_ms % 86400000) * interval '1 millisecond') AT TIME ZONE 'UTC' AS executed_at
                 FROM rec_other) s
     ), based AS (
       SELECT l.*, l.legacy_base || COALESCE('|id:' || l.row_id, '') AS base FROM located l
     ), identified AS (
       SELECT b.*, b.base || '#' || row_number() OVER (PARTITION BY b.base ORDER BY b.line) AS identity,
              CASE WHEN b.row_id IS NOT NULL
                   THEN b.legacy_base || '#' || row_number() OVER (PARTITION BY b.legacy_base ORDER BY b.line)
              END AS legacy_identity
         FROM based b
     )
     SELECT i.line, i.reference, i.partner_reference, i.amount, i.currency, i.executed_at, i.kind, i.identity,
            i.legacy_identity, i.settlement_amount, i.settlement_currency,
            CASE WHEN i.kind = 'reversal' THEN reversed.intent_id ELSE named.intent_id END AS intent_id,
            reversed.record_id AS reverses
       FROM identified i
       LEFT JOIN LATERAL (
         SELECT pr.intent_id, pr.id AS record_id
           FROM partner_records pr
          WHERE pr.intent_id IN (SELECT it.id FROM intents it
                                  WHERE it.partner = $1 AND it.partner_reference = i.partner_reference AND $2
                                 UNION ALL
                                 SELECT it.id FROM intents it WHERE it.partner = $1 AND it.reference = i.reference)
            AND pr.partner = $1 AND pr.kind = 'execution'
          ORDER BY pr.partner_reference IS NOT DISTINCT FROM i.partner_reference DESC,
                   pr.reference IS NOT DISTINCT FROM i.reference DESC, pr.id
          LIMIT 1
       ) reversed ON i.kind = 'reversal'
       LEFT JOIN LATERAL (
         SELECT CASE WHEN count(DISTINCT n.id) = 1 THEN min(n.id) END AS intent_id
           FROM (SELECT it.id FROM intents it
                  WHERE it.partner = $1 AND it.partner_reference = i.partner_reference AND $2
                 UNION ALL
                 SELECT it.id FROM intents it WHERE it.partner = $1 AND it.reference = i.reference) n
       ) named ON i.kind = 'failed'`,
    [input.partner, input.partnerReferenceUnique],
  );
  // Autovacuum never analyzes temp tables; probesTable reads the size ANALYZE counted.
  await db.query('ANALYZE rec_other_tied');
  // `partner_records` holds every row of every report: the legacy identities are looked up by one probe of
  // the unique (partner, identity) index per row, as findKnownRecords does, unless these rows are of the
  // table's size. OFFSET 0 keeps PostgreSQL from turning NOT EXISTS into an anti join, which it may run by
  // hashing the whole table (see probesTable; docs/PERFORMANCE.md, "Identity in a hash index, measured
  // and left").
  const probe = (await probesTable(db, 'partner_records', 'rec_other_tied')) ? 'OFFSET 0' : '';
  await db.query(
    `INSERT INTO partner_records (partner, identity, run_id, line, reference, partner_reference, amount, currency,
                                  executed_at, intent_id, kind, reverses, settlement_amount, settlement_currency)
     SELECT $1, identity, $2, line, reference, partner_reference, amount, currency, executed_at, intent_id,
            kind, reverses, settlement_amount, settlement_currency
       FROM rec_other_tied t
      WHERE NOT EXISTS (
              SELECT 1 FROM partner_records pr
               WHERE pr.partner = $1 AND pr.identity = t.legacy_identity AND pr.kind = t.kind
                 AND pr.amount IS NOT DISTINCT FROM t.amount AND pr.currency IS NOT DISTINCT FROM t.currency
                 AND pr.executed_at IS NOT DISTINCT FROM t.executed_at
              ${probe})
      ORDER BY line
     ON CONFLICT (partner, identity) DO NOTHING`,
    [input.partner, input.runId],
  );
  const untied = await db.query<{ line: number; total: number; unreferenced: number }>(
    `SELECT line, count(*) OVER ()::int AS total, count(*) FILTER (WHERE reference IS NULL) OVER ()::int AS unreferenced
       FROM rec_other_tied
      WHERE kind = 'reversal' AND reverses IS NULL ORDER BY line LIMIT ${LISTED_LINES}`,
  );
  if (untied.rows.length === 0) return null;
  const { total, unreferenced } = untied.rows[0]!;
  const lines = untied.rows.map((row) => row.line).join(', ');
  const more = total > untied.rows.length ? ', ...' : '';
  const warning = `${total} reversal row${total === 1 ? '' : 's'} reverse no execution of an intent on record (line${total === 1 ? '' : 's'} ${lines}${more}): nothing was completed or flagged for ${total === 1 ? 'it' : 'them'}`;
  if (input.partnerReferenceUnique || unreferenced === 0) return warning;
  return (
    `${warning}; ${unreferenced} of them carry no reference of ours, and this partner's own reference repeats ` +
    '(match.partnerReferenceUnique false), so they are not tied by it: find the execution each reverses by hand'
  );
}
