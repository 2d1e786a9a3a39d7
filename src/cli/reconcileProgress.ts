import { basename } from 'node:path';
import type { RunProgress } from '../reconcile/runProgress.js';
import { createProgress, type Progress, type ProgressOptions } from './progress.js';

/** The `reconcile` command's progress display; a no-op when disabled. */
export interface ReconcileProgress {
  /** Pass as `ReconcileOptions.onProgress`. */
  onProgress(progress: RunProgress): void;
  /** Ends a line left open (by a run that threw). Idempotent. */
  finish(): void;
}

/**
 * What `intent-ledger reconcile` draws on stderr for each run: while the report is read, the rows read so
 * far and their rate (`reading 2026-11-28.csv 250000 31.2k/s`), redrawn in place; then one line for the
 * deciding phase, which is set-based SQL reporting nothing until it ends (seconds to tens of seconds for a
 * million rows: docs/PERFORMANCE.md, "The command line"), so the line says so and is completed with its
 * time and the run's status when it does:
 * `deciding on 1000000 rows... 15.2 s, succeeded`. Nothing at all when disabled (not a terminal, --json).
 * There is no total: the row count of a file is known only once it has been read.
 */
export function createReconcileProgress(
  options: Omit<ProgressOptions, 'label' | 'total'>,
): ReconcileProgress {
  if (!options.enabled) return { onProgress() {}, finish() {} };
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? Date.now;
  let runId: string | undefined;
  let bar: Progress | undefined;
  let decidingSince: number | undefined;

  const endLine = () => {
    bar?.finish();
    bar = undefined;
    if (decidingSince !== undefined) stream.write('\n');
    decidingSince = undefined;
  };

  return {
    onProgress(progress) {
      if (progress.runId !== runId) {
        endLine();
        runId = progress.runId;
      }
      switch (progress.phase) {
        case 'reading':
          bar ??= createProgress({ ...options, label: `reading ${basename(progress.source)}` });
          bar.update(progress.rowsRead);
          break;
        case 'deciding':
          bar?.update(progress.rowsRead);
          endLine();
          stream.write(`deciding on ${progress.rowsRead} rows...`);
          decidingSince = now();
          break;
        case 'done':
          if (decidingSince !== undefined) {
            const seconds = ((now() - decidingSince) / 1000).toFixed(1);
            stream.write(` ${seconds} s, ${progress.status}\n`);
            decidingSince = undefined;
          } else {
            bar?.update(progress.rowsRead);
            endLine();
          }
          break;
      }
    },
    finish: endLine,
  };
}
