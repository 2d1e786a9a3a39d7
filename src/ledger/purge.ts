import type { Pool } from 'pg';
import { type Duration, toMilliseconds } from '../shared/duration.js';
import type { Logger } from '../shared/logger.js';
import { purgeInbox, purgeSettledIntents } from './sql/purgeSettled.js';

export interface PurgeOptions {
  /** How old a settled intent or an inbox row must be to go: the dedup window, e.g. `'30d'`. */
  olderThan: Duration;
  /** Rows per batch. @default 5000 */
  batchSize?: number;
  /**
   * Called after every batch with the totals deleted so far (intents first, then inbox rows), for progress
   * bars. An exception it throws is ignored: reporting never stops a purge halfway.
   * @default none
   */
  onProgress?: (deleted: { intents: number; inbox: number }) => void;
  /**
   * Stops the purge before its next batch once fired: the batch running then commits, what was deleted
   * stays deleted, and a later purge goes on where this one stopped.
   * @default none
   */
  signal?: AbortSignal;
}

/** What a purge deleted, and whether its signal stopped it before the end. */
export interface PurgeResult {
  intents: number;
  inbox: number;
  interrupted: boolean;
}

/**
 * Retention (`Ledger.purge`): deletes settled intents (with their attempts) and inbox rows older than
 * `olderThan`, in batches of one short transaction each, intents first.
 */
export async function purgeExpired(pool: Pool, log: Logger, options: PurgeOptions): Promise<PurgeResult> {
  const olderThanMs = toMilliseconds(options.olderThan, 'purge olderThan');
  const batchSize = options.batchSize ?? 5_000;
  // A batch of 0 would delete nothing forever: the loops below end only on a short batch.
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError(`purge batchSize must be a whole number >= 1 (got ${batchSize})`);
  const deleted = { intents: 0, inbox: 0 };
  const tell = () => {
    try {
      options.onProgress?.({ ...deleted });
    } catch {
      // a progress display is not worth a half-done purge
    }
  };
  // Interrupted only when the signal stopped a loop that had more to do: a signal arriving during the
  // last, short batch changes nothing, and the purge reports that it finished.
  let interrupted = false;
  const stopped = () => {
    interrupted = options.signal?.aborted === true;
    return interrupted;
  };
  for (let batch = batchSize; batch === batchSize && !stopped(); ) {
    batch = await purgeSettledIntents(pool, olderThanMs, batchSize);
    deleted.intents += batch;
    tell();
  }
  for (let batch = batchSize; batch === batchSize && !interrupted && !stopped(); ) {
    batch = await purgeInbox(pool, olderThanMs, batchSize);
    deleted.inbox += batch;
    tell();
  }
  log.info(
    { ...deleted, olderThanMs, interrupted },
    interrupted ? 'purge interrupted' : 'purged settled intents and inbox rows',
  );
  return { ...deleted, interrupted };
}
