import type { Queryable } from '../database/queryable.js';
import { identifyRows } from './identifyRows.js';
import { type MatchOutcome, matchReferenceCandidates, matchReportByAmount } from './matchRows.js';
import type { ResolvedMatch } from './runSettings.js';
import { lockPartnerReconciliation } from './sql/lockPartnerReconciliation.js';

/**
 * Turns the staged report (`rec_staged`) into what every decision reads: `rec_report` (each row with its
 * identity, its record id and the intent it matched) and `rec_ambiguous` (line, candidate intent, for rows
 * that could be several intents'). Returns how many rows went each way.
 *
 * Takes the partner's reconciliation lock first: from matching on, the run reads intents and must see what
 * the previous run of this partner committed (an intent it purged, a match it stored).
 *
 * Under reference matching, identifyRows joins each staged row with its candidate intents in the same pass
 * that identifies it, and matchReferenceCandidates decides from them: storing the rows, collecting their
 * evidence and finding orphans then read one table instead of joining the report with its matches three
 * times (docs/PERFORMANCE.md, "Staging and deciding a report"). Amount matching needs the identified rows,
 * so it comes after and writes its matches in.
 */
export async function prepareReport(
  db: Queryable,
  input: { partner: string; match: ResolvedMatch; clockSkewMs: number; checkpoint?: () => void },
): Promise<MatchOutcome> {
  const { partner, match, clockSkewMs } = input;
  await lockPartnerReconciliation(db, partner, input.checkpoint);
  if (match.by === 'amount') {
    await identifyRows(db, null);
    return matchReportByAmount(db, partner, match, clockSkewMs);
  }
  const column = match.by === 'reference' ? 'reference' : 'partner_reference';
  const identified = await identifyRows(db, { partner, column, clockSkewMs });
  return matchReferenceCandidates(db, identified);
}
