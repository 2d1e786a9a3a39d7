/**
 * A reconciler file whose default export is not a valid reconciler. Every problem of the file is listed at
 * once (each with its field), so one edit can fix them all.
 */
export class ReconcilerConfigError extends Error {
  override readonly name = 'ReconcilerConfigError';
  readonly code = 'RECONCILER_CONFIG_INVALID';

  constructor(
    /** The reconciler file. */
    readonly file: string,
    /** Each problem: `field: what is wrong`. */
    readonly problems: readonly string[],
  ) {
    super(
      problems.length === 1
        ? `${file}: ${problems[0]}`
        : `${file}: ${problems.length} problems:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`,
    );
  }
}
