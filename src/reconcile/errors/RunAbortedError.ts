/** The run's signal fired: everything is rolled back and the run is recorded as failed with error `aborted`. */
export class RunAbortedError extends Error {
  override readonly name = 'RunAbortedError';
  constructor() {
    super('aborted');
  }
}
