/** Too many rejected rows: the run applies nothing. The message is the run's `error`. */
export class TooManyRejectedRowsError extends Error {
  override readonly name = 'TooManyRejectedRowsError';
  constructor(rejected: number, read: number, maxRejectedRatio: number) {
    const percent = Number(((rejected / read) * 100).toFixed(2));
    super(`${rejected} of ${read} rows rejected (${percent}%), above maxRejectedRatio ${maxRejectedRatio}`);
  }
}
