import type { Queryable } from '../database/queryable.js';
import type { Coverage } from './coverage.js';
import {
  flagCorrections,
  flagDuplicates,
  flagEarlierExecutions,
  flagLateExecutions,
  flagMismatches,
} from './flagExecutions.js';
import { flagAmbiguous, flagMissing, flagOrphans, flagUnresolved } from './flagUnmatched.js';

/**
 * Works out every discrepancy this run observes into `rec_flags`, one set-based INSERT per kind, each row
 * with its dedupe key (the identity of the problem, so a re-run finds it raised already), the intent and
 * attempt, the amount at risk with its currency, a sentence for finance, the rows behind it in `details`,
 * and the ids of their `partner_records`. Nothing is raised here: {@link raiseFlags} does that.
 */
export async function flagDiscrepancies(
  db: Queryable,
  input: {
    partner: string;
    source: string;
    stuckAfterMs: number;
    coverage: Coverage | null;
    lookup: boolean;
    /** Why the run has no report (see applyNoReport), worded into the `unresolved` summaries. */
    noReport?: string;
    runId: string;
    /** To judge a row an earlier attempt's (src/reconcile/earlierAttempt.ts). */
    settlementLagMs: number;
    clockSkewMs: number;
  },
): Promise<void> {
  await createFlagsTable(db);
  await flagDuplicates(db);
  await flagEarlierExecutions(db, input);
  await flagMismatches(db);
  await flagCorrections(db);
  await flagLateExecutions(db, input);
  if (!input.lookup && input.coverage) await flagMissing(db, input.coverage);
  if (!input.lookup) await flagOrphans(db, input);
  await flagAmbiguous(db, input);
  await flagUnresolved(db, input.stuckAfterMs, input.noReport);
}

/** `rec_flags`, empty: what raiseFlags raises. */
async function createFlagsTable(db: Queryable): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_flags (
       kind text NOT NULL, intent_id bigint, attempt integer, reference text, partner_reference text,
       amount_at_risk numeric, currency text, summary text NOT NULL, details jsonb NOT NULL,
       dedupe_key text NOT NULL, partner_record_ids bigint[] NOT NULL
     ) ON COMMIT DROP`,
  );
}
