import type { Queryable } from '../database/queryable.js';
import { lookupByReference } from '../reports/lookupPartnerReference.js';
import type { PartnerRow, ReportItem } from '../reports/partnerRow.js';
import type { Logger } from '../shared/logger.js';
import type { ReconcilerApiSource } from './reconcilerConfig.js';
import { stuckCondition } from './stuckCondition.js';

/** Stuck intents read per query; bounds memory however many are stuck. */
const PAGE_SIZE = 500;

/**
 * Lookup mode, for partners without a listing: asks the partner about the reference of every stuck intent
 * of the partner (in id order, a page at a time) and yields what it answers as report items, numbered in
 * the order they come. Each intent asked about is recorded in `rec_looked_up (intent_id, attempt, items)`:
 * for those, and only those, an answer without a single item (a 404, or an empty list) covers the attempt
 * from its start until now. Any item at all, even one rejected or carrying another reference, means the
 * partner has something for it, and then absence is never concluded. A row that does not echo a reference
 * is the answer about the reference asked, and gets it. Intents without a reference cannot be asked about
 * and prove nothing.
 */
export async function* lookupStuckIntents(
  db: Queryable,
  input: {
    partner: string;
    source: ReconcilerApiSource;
    stuckAfterMs: number;
    timezone: string;
    env?: NodeJS.ProcessEnv;
    logger: Logger;
    signal?: AbortSignal;
  },
): AsyncGenerator<ReportItem> {
  await db.query(
    `CREATE TEMP TABLE rec_looked_up (intent_id bigint PRIMARY KEY, attempt integer NOT NULL, items integer NOT NULL)
     ON COMMIT DROP`,
  );
  let line = 0;
  let after = '0';
  for (;;) {
    const page = await db.query<{ id: string; attempt: number; reference: string }>(
      `SELECT i.id, i.attempt, i.reference FROM intents i
        WHERE i.partner = $1 AND i.reference IS NOT NULL AND ${stuckCondition('i', '$2')} AND i.id > $3
        ORDER BY i.id LIMIT ${PAGE_SIZE}`,
      [input.partner, input.stuckAfterMs, after],
    );
    if (page.rows.length === 0) return;
    const items: number[] = [];
    for (const intent of page.rows) {
      const answer = await lookupByReference(input.source, intent.reference, {
        partner: input.partner,
        timezone: input.timezone,
        env: input.env,
        logger: input.logger,
        signal: input.signal,
      });
      items.push(answer.rows.length + answer.rejected.length);
      // Rows first, then rejections, each renumbered: the partner numbers them per answer.
      for (const row of answer.rows) {
        line += 1;
        const renumbered: PartnerRow = { ...row, line, reference: row.reference ?? intent.reference };
        yield { kind: 'row', row: renumbered };
      }
      for (const rejected of answer.rejected) {
        line += 1;
        yield {
          kind: 'rejected',
          rejected: {
            ...rejected,
            line,
            reason: `looking up ${JSON.stringify(intent.reference)}: ${rejected.reason}`,
          },
        };
      }
    }
    await db.query(
      'INSERT INTO rec_looked_up (intent_id, attempt, items) SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[])',
      [page.rows.map((row) => row.id), page.rows.map((row) => row.attempt), items],
    );
    after = page.rows[page.rows.length - 1].id;
  }
}
