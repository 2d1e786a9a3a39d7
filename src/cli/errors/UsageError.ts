/** A command line the CLI cannot run; printed with the usage and exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
