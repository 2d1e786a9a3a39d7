import { reviewCommand } from './reviewCommand.js';

export const dismissUsage =
  'intent-ledger dismiss <id...> --note TEXT --by NAME [--assignee NAME]   dismiss open or acknowledged discrepancies';

/** `intent-ledger dismiss`: open | acknowledged -> dismissed (not a real problem), for every id or none. */
export function dismissCommand(args: string[]): Promise<number> {
  return reviewCommand('dismiss', args);
}
