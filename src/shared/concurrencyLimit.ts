/**
 * At most `limit` tasks at a time; the others wait their turn in the order they arrived. A task that throws
 * still gives its turn back.
 */
export class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit must be a positive integer, got ${limit}`);
  }

  /** Tasks started and not finished yet. */
  get active(): number {
    return this.running;
  }

  /** Runs `task` once fewer than `limit` others are running. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The turn passes straight to the next task, so `running` never drops below what is in flight.
      if (next) next();
      else this.running--;
    }
  }
}
