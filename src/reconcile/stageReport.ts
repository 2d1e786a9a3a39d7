import type { ClientBase } from 'pg';
import type { PartnerRow, RejectedRow, ReportItem } from '../reports/partnerRow.js';
import { CopyBatch, copyLine, copyStagedRows } from './copyBatch.js';
import { RunAbortedError } from './errors/RunAbortedError.js';
import { MAX_REPORTED_REJECTIONS } from './reconciliationResult.js';
import { foldDeclaration, type ReportedPeriod } from './reportedCoverage.js';

/**
 * Rows per COPY. Staging with `COPY FROM STDIN` (text format) takes about half the time of
 * `INSERT ... SELECT FROM unnest(...)` batches, whatever their size, and most of the unnest cost was on
 * our side: node-postgres escapes every array element into an array literal, PostgreSQL then parses it
 * back; COPY's text format is one line per row with almost nothing to escape, and PostgreSQL loads it with
 * multi-row inserts. 5,000 rows (a few hundred KB of COPY text) already makes the round trip per statement
 * negligible while the next batch is parsed, keeps memory flat, and lets an abort stop the reading within
 * a batch. Figures: docs/PERFORMANCE.md, "Staging and deciding a report".
 */
const STAGE_BATCH_SIZE = 5_000;
/** Identified rejected records per INSERT into `rec_rejected`. */
const REJECTED_BATCH_SIZE = 1_000;
/** A batch is also sent once its COPY text reaches this many bytes (rows with very long values). */
const STAGE_BATCH_BYTES = 8 * 1024 * 1024;

export interface StageResult {
  rowsRead: number;
  rowsRejected: number;
  /** The first {@link MAX_REPORTED_REJECTIONS} rejected records. */
  rejected: RejectedRow[];
  /**
   * Rejected records that could not be read far enough to say which intent they are about (see
   * {@link RejectedRow.identifiers}); the others' identifiers are in `rec_rejected`.
   */
  rowsUnidentified: number;
  /**
   * The staged rows and the span of their execution times, counted while staging: what
   * `SELECT count(*), min(executed_at), max(executed_at)` would say afterwards, without reading them again.
   */
  extent: ReportExtent;
  /**
   * The period the report's own coverage declarations share (ReportItem `declaration`), when it made any;
   * used only by a reconciler whose coverage is `{ fromReport: true }`.
   */
  reported?: ReportedPeriod;
  /**
   * The line of the report's last record when it has no line break after it on a source whose complete
   * files end with one (RejectedRow.unterminated): the file may be cut short, so the run proves nothing absent.
   */
  unterminatedLine?: number;
}

/** Rows of a report and the span of their execution times. */
export interface ReportExtent {
  rows: number;
  from: Date | null;
  to: Date | null;
  /**
   * Executions staged without our reference, and without the partner's: counted here so that a run whose
   * executions all carry the value it matches on reads none of them again to find those that name nobody
   * (anonymousExecutions.ts).
   */
  executionsWithout: { reference: number; partnerReference: number };
}

/**
 * Streams a report's items into `rec_staged`, {@link STAGE_BATCH_SIZE} rows per COPY, while the next batch
 * is already being parsed (at most one COPY in flight). Only the current batch and the first rejections are
 * ever held in memory. `onRow` sees every accepted row (for checksums). Counts go into `result` as they are
 * read, so they are known even when staging stops. Throws {@link RunAbortedError} as soon as `signal` fires;
 * whatever the source throws (a ReportFormatError, a PartnerApiError) propagates and the caller rolls back.
 * The source yields items an array at a time (see readCsvReportBatches; {@link oneByOne} adapts others).
 */
export async function stageReport(
  db: ClientBase,
  batches: AsyncIterable<readonly ReportItem[]>,
  options: { signal?: AbortSignal; onRow?: (row: PartnerRow) => void; onBatch?: (rowsRead: number) => void },
  result: StageResult = {
    rowsRead: 0,
    rowsRejected: 0,
    rejected: [],
    rowsUnidentified: 0,
    extent: { rows: 0, from: null, to: null, executionsWithout: { reference: 0, partnerReference: 0 } },
  },
): Promise<StageResult> {
  const extent = result.extent;
  // Two buffers: one is filled while the other one's COPY is in flight.
  let filling = new CopyBatch();
  let spare = new CopyBatch();
  let inFlight: Promise<void> | undefined;
  let failure: { error: unknown } | undefined;
  // Identified rejections waiting for their INSERT; few in any run that can succeed (maxRejectedRatio).
  let rejectedKeys: { line: number; reference: string | null; partnerReference: string | null }[] = [];
  const flushRejected = async () => {
    if (rejectedKeys.length === 0) return;
    // After the COPY in flight: one statement at a time on the connection.
    if (inFlight) await inFlight;
    if (failure) throw failure.error;
    const keys = rejectedKeys;
    rejectedKeys = [];
    await db.query(
      `INSERT INTO rec_rejected (line, reference, partner_reference)
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[])`,
      [
        keys.map((key) => key.line),
        keys.map((key) => key.reference),
        keys.map((key) => key.partnerReference),
      ],
    );
  };

  const flush = async () => {
    if (inFlight) await inFlight;
    if (failure) throw failure.error;
    if (filling.rows === 0) return;
    const batch = filling;
    filling = spare;
    filling.clear();
    spare = batch;
    // The rejection is captured, not left unhandled while parsing continues; it is rethrown at the next flush.
    const readSoFar = result.rowsRead;
    inFlight = copyStagedRows(db, batch.bytes()).then(
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
    for await (const items of batches) {
      for (const item of items) {
        if (options.signal?.aborted) throw new RunAbortedError();
        // What the report says about itself is no row: not read, not rejected, not staged.
        if (item.kind === 'declaration') {
          result.reported = foldDeclaration(result.reported, item.coverage);
          continue;
        }
        result.rowsRead += 1;
        const problem = item.kind === 'row' ? unstorable(item.row) : undefined;
        if (item.kind === 'rejected' || problem) {
          result.rowsRejected += 1;
          const rejected = item.kind === 'rejected' ? item.rejected : { line: item.row.line, ...problem! };
          const { identifiers, unterminated, ...reported } = rejected;
          if (unterminated) result.unterminatedLine = rejected.line;
          if (result.rejected.length < MAX_REPORTED_REJECTIONS) result.rejected.push(reported);
          if (identifiers === undefined) {
            result.rowsUnidentified += 1;
          } else if (identifiers.reference !== null || identifiers.partnerReference !== null) {
            rejectedKeys.push({ line: rejected.line, ...identifiers });
            if (rejectedKeys.length >= REJECTED_BATCH_SIZE) await flushRejected();
          }
          continue;
        }
        const row = item.row;
        options.onRow?.(row);
        filling.append(copyLine(row));
        extent.rows += 1;
        if (row.kind === undefined || row.kind === 'execution') {
          if (row.reference === null || row.reference === '') extent.executionsWithout.reference += 1;
          if (row.partnerReference === null || row.partnerReference === '')
            extent.executionsWithout.partnerReference += 1;
        }
        if (row.executedAt !== null) {
          if (extent.from === null || row.executedAt < extent.from) extent.from = row.executedAt;
          if (extent.to === null || row.executedAt > extent.to) extent.to = row.executedAt;
        }
        if (filling.rows >= STAGE_BATCH_SIZE || filling.length >= STAGE_BATCH_BYTES) await flush();
      }
    }
    await flush();
    await flushRejected();
    await inFlight;
    if (failure) throw failure.error;
  } finally {
    // On any exit the last COPY must be settled before the caller rolls back on the same connection.
    await inFlight;
  }
  if (options.signal?.aborted) throw new RunAbortedError();
  return result;
}

/** A source that yields items one at a time (API listings, lookups), as one-item batches. */
export async function* oneByOne(items: AsyncIterable<ReportItem>): AsyncGenerator<ReportItem[]> {
  for await (const item of items) yield [item];
}

/** PostgreSQL text cannot hold NUL: such a value is rejected here instead of failing the whole run. */
function unstorable(row: PartnerRow): { field: string; reason: string } | undefined {
  if (row.reference?.includes('\u0000')) {
    return { field: 'reference', reason: 'reference contains a NUL character' };
  }
  if (row.partnerReference?.includes('\u0000')) {
    return { field: 'partnerReference', reason: 'partnerReference contains a NUL character' };
  }
  return undefined;
}
