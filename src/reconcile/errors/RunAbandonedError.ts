/**
 * The run's row was closed as `abandoned` by another process before the run could commit (its heartbeat had
 * gone stale: a pause or a lost database connection longer than the threshold). The run rolls back, so what
 * the row says is true: nothing it did was applied.
 */
export class RunAbandonedError extends Error {
  override readonly name = 'RunAbandonedError';
  constructor() {
    super(
      'abandoned: another process closed this run because its heartbeat had stopped; it was rolled back and nothing was applied',
    );
  }
}
