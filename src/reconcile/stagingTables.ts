import type { Queryable } from '../database/queryable.js';

/**
 * The temp table the report's accepted rows are streamed into, dropped with the run's transaction. Execution
 * times travel as epoch milliseconds (identifyRows turns them into timestamptz, exactly): formatting a Date
 * with toISOString was a visible part of the reading, in the one thread that also parses
 * (docs/PERFORMANCE.md, "Staging and deciding a report").
 */
export async function createStagingTable(db: Queryable): Promise<void> {
  // What rejected records still say about whom: a run never proves these intents absent.
  await db.query(
    `CREATE TEMP TABLE rec_rejected (line integer NOT NULL, reference text, partner_reference text)
     ON COMMIT DROP`,
  );
  await db.query(
    // kind: null for an execution, else the row's kind (see separateRowKinds, which takes those rows out).
    `CREATE TEMP TABLE rec_staged (
       line              integer NOT NULL,
       reference         text,
       partner_reference text,
       amount            numeric,
       currency          text,
       executed_at_ms    bigint,
       kind              text,
       settlement_amount numeric,
       settlement_currency text,
       row_id            text
     ) ON COMMIT DROP`,
  );
}
