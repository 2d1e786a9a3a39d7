import type { PartnerRow, RejectedRow, ReportItem } from '../reports/partnerRow.js';
import type { Queryable } from '../sql/queryable.js';
import { RunAborted } from './runFailure.js';
import { MAX_REPORTED_REJECTIONS } from './runReport.js';

/** Rows per INSERT: big enough to amortise the round trip, small enough to keep memory flat. */
export const STAGE_BATCH_SIZE = 5_000;

export interface StageResult {
  rowsRead: number;
  rowsRejected: number;
  /** The first {@link MAX_REPORTED_REJECTIONS} rejected records. */
  rejected: RejectedRow[];
}

/** The temp table the report's accepted rows are streamed into, dropped with the run's transaction. */
export async function createStagingTable(db: Queryable): Promise<void> {
  await db.query(
    `CREATE TEMP TABLE rec_staged (
       line              integer NOT NULL,
       reference         text,
       partner_reference text,
       amount            numeric,
       currency          text,
       executed_at       timestamptz
     ) ON COMMIT DROP`,
  );
}

/** Appends one batch of rows to `rec_staged` in one statement (arrays unnested server-side). */
export async function insertStagedRows(db: Queryable, rows: readonly PartnerRow[]): Promise<void> {
  const lines: number[] = [];
  const references: (string | null)[] = [];
  const partnerReferences: (string | null)[] = [];
  const amounts: (string | null)[] = [];
  const currencies: (string | null)[] = [];
  const executedAts: (string | null)[] = [];
  for (const row of rows) {
    lines.push(row.line);
    references.push(row.reference);
    partnerReferences.push(row.partnerReference);
    amounts.push(row.amount);
    currencies.push(row.currency);
    executedAts.push(row.executedAt?.toISOString() ?? null);
  }
  await db.query(
    `INSERT INTO rec_staged (line, reference, partner_reference, amount, currency, executed_at)
     SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::numeric[], $5::text[], $6::timestamptz[])`,
    [lines, references, partnerReferences, amounts, currencies, executedAts],
  );
}

/**
 * Streams a report's items into `rec_staged`, {@link STAGE_BATCH_SIZE} rows per statement, while the next
 * batch is already being parsed (at most one INSERT in flight). Only the current batch and the first
 * rejections are ever held in memory. `onRow` sees every accepted row (for checksums). Counts go into
 * `result` as they are read, so they are known even when staging stops. Throws {@link RunAborted} as soon
 * as `signal` fires; whatever the source throws (a ReportFormatError, a PartnerApiError) propagates and the
 * caller rolls back.
 */
export async function stageReport(
  db: Queryable,
  items: AsyncIterable<ReportItem>,
  options: { signal?: AbortSignal; onRow?: (row: PartnerRow) => void; onBatch?: (rowsRead: number) => void },
  result: StageResult = { rowsRead: 0, rowsRejected: 0, rejected: [] },
): Promise<StageResult> {
  let batch: PartnerRow[] = [];
  let inFlight: Promise<void> | undefined;
  let failure: { error: unknown } | undefined;

  const flush = async () => {
    if (inFlight) await inFlight;
    if (failure) throw failure.error;
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    // The rejection is captured, not left unhandled while parsing continues; it is rethrown at the next flush.
    const readSoFar = result.rowsRead;
    inFlight = insertStagedRows(db, rows).then(
      () => {
        try {
          options.onBatch?.(readSoFar);
        } catch {
          // progress reporting never breaks a run
        }
      },
      (error: unknown) => {
        failure = { error };
      },
    );
  };

  try {
    for await (const item of items) {
      if (options.signal?.aborted) throw new RunAborted();
      result.rowsRead += 1;
      const problem = item.kind === 'row' ? unstorable(item.row) : undefined;
      if (item.kind === 'rejected' || problem) {
        result.rowsRejected += 1;
        const rejected = item.kind === 'rejected' ? item.rejected : { line: item.row.line, ...problem! };
        if (result.rejected.length < MAX_REPORTED_REJECTIONS) result.rejected.push(rejected);
        continue;
      }
      options.onRow?.(item.row);
      batch.push(item.row);
      if (batch.length >= STAGE_BATCH_SIZE) await flush();
    }
    await flush();
    await inFlight;
    if (failure) throw failure.error;
  } finally {
    // On any exit the last INSERT must be settled before the caller rolls back on the same connection.
    await inFlight;
  }
  if (options.signal?.aborted) throw new RunAborted();
  return result;
}

/** PostgreSQL text cannot hold NUL: such a value is rejected here instead of failing the whole run. */
function unstorable(row: PartnerRow): { field: string; reason: string } | undefined {
  for (const [field, value] of [
    ['reference', row.reference],
    ['partnerReference', row.partnerReference],
  ] as const) {
    if (value?.includes('\u0000')) return { field, reason: `${field} contains a NUL character` };
  }
  return undefined;
}
