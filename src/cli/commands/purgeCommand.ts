import pino from 'pino';
import { createLedger } from '../../ledger/createLedger.js';
import { countPurgeable } from '../../ledger/sql/purgeSettled.js';
import { toMilliseconds } from '../../shared/duration.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { createProgress, type Progress } from '../progress.js';
import { parsePositiveInt, parseStrict } from './discrepancyArgs.js';

/**
 * The shortest window the CLI accepts. A settled intent is what turns a redelivered message into a replay
 * instead of a second partner call; purged sooner than the broker (or a producer retrying) can deliver the
 * message again, it makes a double charge possible. Brokers redeliver within minutes to hours; a day keeps
 * a typing slip (`--older-than 0s`, `1h` for `1d`) from deleting the dedup record of live traffic. The
 * library's `Ledger.purge` takes any window, for callers that know their redelivery horizon.
 */
const MIN_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Exit status of a purge stopped by a signal: 128 + SIGINT's number, as shells report an interrupted command. */
const INTERRUPTED_EXIT = 130;

export const purgeUsage =
  'intent-ledger purge --older-than 30d [--batch-size N] [--json]   delete settled intents and inbox rows past the dedup window';

/**
 * `intent-ledger purge`: retention, through `Ledger.purge` (settled intents not referenced by any
 * discrepancy, and inbox rows, older than `--older-than`; never anything in progress or unknown). From a
 * terminal, without `--json`, a progress bar on stderr counts rows deleted against a count taken first.
 * Prints a summary, or with `--json` one object `{ intents, inbox, interrupted }`. Exit 0 on success, 1 when
 * the purge failed (the batches already committed stay deleted: each is its own transaction), 2 on usage
 * errors. Ctrl-C (SIGINT) or SIGTERM stops it after the batch in flight: it says how far it got and exits
 * {@link INTERRUPTED_EXIT}; running it again goes on.
 */
export async function purgeCommand(args: string[]): Promise<number> {
  const { values } = parseStrict({
    args,
    options: {
      'older-than': { type: 'string' },
      'batch-size': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  const window = values['older-than'];
  if (window === undefined)
    throw new UsageError('purge needs --older-than, the dedup window (e.g. --older-than 30d)');
  let olderThanMs: number;
  try {
    olderThanMs = toMilliseconds(window, '--older-than');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (olderThanMs < MIN_WINDOW_MS) {
    throw new UsageError(
      `--older-than ${window} is shorter than 1d: settled intents are what stop a redelivered message from calling the partner again`,
    );
  }
  const batchSize =
    values['batch-size'] === undefined ? undefined : parsePositiveInt('batch-size', values['batch-size']);

  const database = await openCliDatabase();
  let progress: Progress | undefined;
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    // The CLI's pool (with its long statement timeout) and the logger on stderr, so stdout stays the result.
    const ledger = await createLedger({
      dataSource: database.dataSource,
      migrate: false,
      logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2)),
    });
    try {
      const showProgress = process.stderr.isTTY === true && !values.json;
      const total = showProgress ? await countPurgeable(database.pool, olderThanMs) : undefined;
      const bar = createProgress({
        enabled: showProgress,
        label: 'purging',
        total: total && total.intents + total.inbox,
      });
      progress = bar;
      const deleted = await ledger.purge({
        olderThan: olderThanMs,
        batchSize,
        onProgress: (sofar) => bar.update(sofar.intents + sofar.inbox),
        signal: abort.signal,
      });
      bar.finish();
      if (values.json) {
        console.log(
          JSON.stringify({
            intents: deleted.intents,
            inbox: deleted.inbox,
            interrupted: deleted.interrupted,
          }),
        );
      } else if (deleted.interrupted) {
        console.log(
          `purge interrupted: purged ${deleted.intents} settled intents and ${deleted.inbox} inbox rows older than ${window} before stopping; run it again to go on`,
        );
      } else {
        console.log(
          `purged ${deleted.intents} settled intents and ${deleted.inbox} inbox rows older than ${window}`,
        );
      }
      return deleted.interrupted ? INTERRUPTED_EXIT : 0;
    } finally {
      // Ends a bar left open by a failure, before main prints the error on the same stream.
      progress?.finish();
      // Releases nothing of the CLI's database (it was handed in initialised); that is closed below.
      await ledger.close();
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await database.close();
  }
}
