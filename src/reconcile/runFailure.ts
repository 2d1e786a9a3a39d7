/** The run's signal fired: everything is rolled back and the run is recorded as failed with error `aborted`. */
export class RunAborted extends Error {
  override readonly name = 'RunAborted';
  constructor() {
    super('aborted');
  }
}

/** Too many rejected rows: the run applies nothing. The message is the run's `error`. */
export class TooManyRejectedRows extends Error {
  override readonly name = 'TooManyRejectedRows';
  constructor(rejected: number, read: number, maxRejectedRatio: number) {
    const percent = Number(((rejected / read) * 100).toFixed(2));
    super(`${rejected} of ${read} rows rejected (${percent}%), above maxRejectedRatio ${maxRejectedRatio}`);
  }
}
