/** A progress indicator for long CLI runs; a no-op when disabled. */
export interface Progress {
  /** Advances by `n` (default 1). */
  tick(n?: number): void;
  /** Sets the absolute count done. */
  update(done: number): void;
  /** Draws the final state and ends the line (only if anything was drawn). Idempotent. */
  finish(): void;
}

export interface ProgressOptions {
  /** Expected count; without it the bar shows a count and a rate only. */
  total?: number;
  /** What is being counted, e.g. `'exporting'`. */
  label: string;
  /** Draw at all. Callers pass `process.stderr.isTTY && !json`. */
  enabled: boolean;
  /** Where to draw. @default process.stderr */
  stream?: { write(text: string): unknown; columns?: number };
  /** Minimum time between redraws. @default 100 (about 10 per second) */
  intervalMs?: number;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

const NOOP: Progress = { tick() {}, update() {}, finish() {} };

/**
 * A single-line progress bar on stderr, redrawn in place with `\r` at most every `intervalMs`, so it costs
 * nothing on a fast loop and never mixes with stdout. When `enabled` is false (not a terminal, `--json`)
 * it does nothing at all.
 */
export function createProgress(options: ProgressOptions): Progress {
  if (!options.enabled) return NOOP;
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? Date.now;
  const interval = options.intervalMs ?? 100;
  const started = now();
  let done = 0;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let lastLength = 0;
  let finished = false;

  const draw = () => {
    const columns = Math.max(40, stream.columns ?? 80);
    const elapsed = Math.max(1, now() - started) / 1000;
    const rate = `${formatCount(done / elapsed)}/s`;
    let text: string;
    if (options.total && options.total > 0) {
      const ratio = Math.min(1, done / options.total);
      const counts = `${done}/${options.total} ${Math.floor(ratio * 100)}% ${rate}`;
      const width = Math.max(10, Math.min(40, columns - options.label.length - counts.length - 6));
      const filled = Math.round(ratio * width);
      text = `${options.label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${counts}`;
    } else {
      text = `${options.label} ${done} ${rate}`;
    }
    text = text.slice(0, columns - 1);
    // Pad over what the previous, possibly longer, line left behind (no ANSI codes needed).
    stream.write(`\r${text}${' '.repeat(Math.max(0, lastLength - text.length))}`);
    lastLength = text.length;
    lastDraw = now();
  };

  const maybeDraw = () => {
    if (!finished && now() - lastDraw >= interval) draw();
  };

  return {
    tick(n = 1) {
      done += n;
      maybeDraw();
    },
    update(value) {
      done = value;
      maybeDraw();
    },
    finish() {
      if (finished) return;
      draw();
      stream.write('\n');
      finished = true;
    },
  };
}

function formatCount(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 10_000) return `${(n / 1_000).toFixed(1)}k`;
  return `${Math.round(n)}`;
}
