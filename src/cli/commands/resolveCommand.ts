import { reviewCommand } from './reviewCommand.js';

export const resolveUsage =
  'intent-ledger resolve <id...> --note TEXT --by NAME [--assignee NAME]   resolve open or acknowledged discrepancies';

/** `intent-ledger resolve`: open | acknowledged -> resolved, for every id or none; the note is required. */
export function resolveCommand(args: string[]): Promise<number> {
  return reviewCommand('resolve', args);
}
