import { reviewCommand } from './reviewCommand.js';

export const ackUsage =
  'intent-ledger ack <id...> --note TEXT --by NAME [--assignee NAME]   acknowledge open discrepancies';

/** `intent-ledger ack`: open -> acknowledged, for every id or none. */
export function ackCommand(args: string[]): Promise<number> {
  return reviewCommand('acknowledge', args);
}
