import type { Queryable } from '../database/queryable.js';
import { identifyRows } from './identifyRows.js';
import { matchReportByAmount, matchStagedRows } from './matchRows.js';
import type { ResolvedMatch } from './runSettings.js';
import { lockPartnerReconciliation } from './sql/lockPartnerReconciliation.js';

/**
 * Turns the staged report (`rec_staged`) into what every decision reads: `rec_report` (each row with its
 * identity, its record id and the intent it matched) and `rec_match` (line, intent). Returns the number of
 * rows matched.
 *
 * Takes the partner's reconciliation lock first: from matching on, the run reads intents and must see what
 * the previous run of this partner committed (an intent it purged, a match it stored).
 *
 * Reference matching comes first, from the staged rows, so identifyRows writes each row's intent in the
 * same pass: storing the rows, collecting their evidence and finding orphans then read one table instead of
 * joining the report with its matches three times (docs/PERFORMANCE.md, "Staging and deciding a report").
 * Amount matching needs the
 * identified rows, so it comes after and writes its matches in.
 */
export async function prepareReport(db: Queryable, partner: string, match: ResolvedMatch): Promise<number> {
  await lockPartnerReconciliation(db, partner);
  if (match.by === 'amount') {
    await identifyRows(db, { joinMatches: false });
    return matchReportByAmount(db, partner, match);
  }
  const matched = await matchStagedRows(db, partner, match.by);
  await identifyRows(db, { joinMatches: true });
  return matched;
}
