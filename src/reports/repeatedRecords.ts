import { createHash } from 'node:crypto';
import type { RowItem } from './partnerRow.js';

/**
 * Remembers the records an API listing gave, to catch one it gives again.
 *
 * Why: a partner whose paging misbehaves can hand out a page it already gave under a fresh cursor or
 * address (the loop checks of readApiReport compare cursors and addresses, and so miss it). Read as new, its
 * records count twice, so every execution on it looked like a double execution; and when the repeat took
 * the place of a page never given, the listing still looked complete, so the intents of the missing page
 * were proven not executed although the partner executed them: a second charge. A listing that repeats a
 * record is not a complete listing: the reader throws instead, and the run applies nothing.
 *
 * What counts as the same record: an accepted row with the partner's own reference whose every field is
 * the same (kind, both references, amount, currency, execution time). Two distinct records of a partner
 * differ in at least one of these (the partner's id, or for a partner whose ids repeat, like an acquirer's
 * NSU, the time). Left alone: rows without the partner's reference, since two genuinely identical
 * executions of a partner that names none may read the same, and ignored rows (fees, inbound messages),
 * whose fields other than the references are not read, so two fees of one payment would look alike.
 * Kept as digests, about 60 bytes a record.
 */
export class RepeatedRecords {
  private readonly firstLine = new Map<string, number>();

  /** The line at which the listing first gave `item`'s record, when it gave it before; else remembers it. */
  seenBefore(item: RowItem): number | undefined {
    if (item.kind !== 'row' || item.row.partnerReference === null || item.row.kind === 'ignored')
      return undefined;
    const { row } = item;
    const digest = createHash('sha1')
      .update(
        JSON.stringify([
          row.kind ?? 'execution',
          row.partnerReference,
          row.reference,
          row.amount,
          row.currency,
          row.executedAt?.getTime() ?? null,
        ]),
      )
      .digest('base64');
    const first = this.firstLine.get(digest);
    if (first !== undefined) return first;
    this.firstLine.set(digest, row.line);
    return undefined;
  }
}
