import { createHash } from 'node:crypto';
import type { JsonValue } from './parseJsonKeepingNumbers.js';
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
 * What counts as the same record: the same item as the partner wrote it (every field of its JSON, not only
 * those the source maps: two partial refunds of one charge for the same amount in the same second differ
 * in their own ids), among the accepted rows that carry the partner's reference. Left alone: rows without
 * it, since two genuinely identical executions of a partner that names none may read the same, and ignored
 * rows (fees, inbound messages), which say nothing about an intent. Kept as digests, about 80 bytes a record.
 */
export class RepeatedRecords {
  private readonly firstLine = new Map<string, number>();

  /**
   * The line at which the listing first gave `raw`, the item `mapped` was read from, when it gave it
   * before; else remembers it.
   */
  seenBefore(mapped: RowItem, raw: JsonValue): number | undefined {
    if (mapped.kind !== 'row' || mapped.row.partnerReference === null || mapped.row.kind === 'ignored')
      return undefined;
    // Numbers keep their source text (JsonNumber), so an item and its repeat serialise alike.
    const digest = createHash('sha1').update(JSON.stringify(raw)).digest('base64');
    const first = this.firstLine.get(digest);
    if (first !== undefined) return first;
    this.firstLine.set(digest, mapped.row.line);
    return undefined;
  }
}
