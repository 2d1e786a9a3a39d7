import type { Queryable } from '../database/queryable.js';
import type { ResolvedMatch } from './runSettings.js';
import type { ReportExtent } from './stageReport.js';

/**
 * The run's warning about executions in `rec_staged` that name no intent we know, or null when there are
 * none; with one, the run proves no intent absent.
 *
 * Why: under reference (or partner-reference) matching an execution is attributed by the value it carries.
 * One that carries none (a Twilio message listed without its `to`), or one outside `match.shape` (a
 * recipient written in another form than the partner always writes it), matches nobody and becomes an
 * orphan for a person to look at; but it may be the very execution of a stuck intent, so that intent's
 * absence from the report proves nothing. Proving it `not_executed` would have the call made a second time.
 * The same holds for a reversal or failed try that names nobody (separateRowKinds); a row whose matched
 * value fits the shape but belongs to no intent (another system's order) names somebody, just not one of
 * ours, and proves nothing either way.
 *
 * A row still names an intent when its reference or its partner reference is an intent's of this partner
 * (the partner reference only when the partner's are unique: an acquirer's NSU repeats), as in
 * separateRowKinds' anonymousRows. Under amount matching rows carry nothing of ours by design, and what may be
 * an intent's keeps it from being proven absent as a near miss (matchRows.ts): nothing to do here.
 *
 * One pass over the staged executions, made only when staging counted one without the value, or when any
 * value may be outside the shape. The lookups of intents sit inside \`NOT (... AND EXISTS ...)\`, which
 * PostgreSQL cannot turn into an anti join: it would hash every intent of the partner, history included
 * (docs/PERFORMANCE.md, "Cost independent of history"). As subplans they run, one index probe each, only for
 * the few rows that carry no usable value, after the cheap test of every row.
 */
export async function anonymousExecutionsWarning(
  db: Queryable,
  input: { partner: string; match: ResolvedMatch; executionsWithout: ReportExtent['executionsWithout'] },
): Promise<string | null> {
  const { match } = input;
  if (match.by === 'amount') return null;
  const column = match.by === 'reference' ? 'reference' : 'partner_reference';
  const lacking =
    match.by === 'reference' ? input.executionsWithout.reference : input.executionsWithout.partnerReference;
  // Every execution carries the value, and any value will do: nothing to look for.
  if (lacking === 0 && match.shape === undefined) return null;
  const uniquePartnerReference = !(match.by === 'reference' && match.partnerReferenceUnique === false);
  const unusable =
    match.shape === undefined
      ? `s.${column} IS NULL OR s.${column} = ''`
      : `s.${column} IS NULL OR s.${column} !~ $3`;
  const result = await db.query<{ rows: number }>(
    `SELECT count(*)::int AS rows FROM rec_staged s
      WHERE (${unusable})
        AND NOT (s.reference IS NOT NULL
                 AND EXISTS (SELECT 1 FROM intents i WHERE i.partner = $1 AND i.reference = s.reference))
        AND NOT (s.partner_reference IS NOT NULL AND $2
                 AND EXISTS (SELECT 1 FROM intents i
                              WHERE i.partner = $1 AND i.partner_reference = s.partner_reference))`,
    match.shape === undefined
      ? [input.partner, uniquePartnerReference]
      : [input.partner, uniquePartnerReference, match.shape],
  );
  const rows = result.rows[0]!.rows;
  if (rows === 0) return null;
  const field = match.by === 'reference' ? 'reference' : 'partner reference';
  const shape = match.shape === undefined ? '' : ` or one outside match.shape ${match.shape}`;
  return (
    `${rows} executions carry no ${field}${shape} and name no intent we know: each could be any stuck ` +
    "intent's execution, so this run proves no intent absent"
  );
}
