import type { ClientBase } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Queryable } from '../database/queryable.js';
import type { PartnerRow, RejectedRow, ReportItem } from '../reports/partnerRow.js';
import { RunAbortedError } from './errors/RunAbortedError.js';
import { MAX_REPORTED_REJECTIONS } from './reconciliationResult.js';

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
}

/** Rows of a report and the span of their execution times. */
export interface ReportExtent {
  rows: number;
  from: Date | null;
  to: Date | null;
}

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
       settlement_currency text
     ) ON COMMIT DROP`,
  );
}

/** Appends rows (already in COPY text format, see {@link copyLine}) to `rec_staged` with one COPY. */
async function copyStagedRows(db: ClientBase, text: string | Buffer): Promise<void> {
  const stream = db.query(
    copyFrom(
      'COPY rec_staged (line, reference, partner_reference, amount, currency, executed_at_ms, kind, settlement_amount, settlement_currency) FROM STDIN',
    ),
  );
  await new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve);
    stream.on('error', reject);
    stream.end(text);
  });
}

/**
 * One row in COPY's text format: tab-separated, `\N` for null, backslash escapes. The kind is null for an
 * execution (almost every row), so separateRowKinds finds the others without a comparison per row.
 */
function copyLine(row: PartnerRow): string {
  return `${row.line}\t${copyText(row.reference)}\t${copyText(row.partnerReference)}\t${row.amount ?? '\\N'}\t${copyText(row.currency)}\t${row.executedAt === null ? '\\N' : row.executedAt.getTime()}\t${row.kind === undefined || row.kind === 'execution' ? '\\N' : row.kind}\t${row.settlementAmount ?? '\\N'}\t${copyText(row.settlementCurrency ?? null)}\n`;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function copyText(value: string | null): string {
  if (value === null) return '\\N';
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (char) => COPY_ESCAPES[char]!) : value;
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
    extent: { rows: 0, from: null, to: null },
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
        result.rowsRead += 1;
        const problem = item.kind === 'row' ? unstorable(item.row) : undefined;
        if (item.kind === 'rejected' || problem) {
          result.rowsRejected += 1;
          const rejected = item.kind === 'rejected' ? item.rejected : { line: item.row.line, ...problem! };
          const { identifiers, ...reported } = rejected;
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

/**
 * The COPY text of one batch, as UTF-8 in a buffer that is reused batch after batch: each row's line is a
 * short-lived string, so the heap holds one chunk of parsed rows at a time, not the batch being built and
 * the one in flight as strings. Accumulated as strings, those survived young-generation collections and
 * piled up in the old generation until a full collection, and the CLI's peak memory grew with the size of
 * the report; this way it grows much less. (What remains is mostly V8 growing its young generation under a
 * long run of allocations: with a small semi-space, reading and staging alone peak at the same memory for
 * 1M rows as for 100k.) Figures: docs/PERFORMANCE.md, "Staging and deciding a report".
 */
class CopyBatch {
  private buffer = Buffer.allocUnsafe(1024 * 1024);
  /** Bytes written. */
  length = 0;
  rows = 0;

  append(line: string): void {
    // At most 3 UTF-8 bytes per UTF-16 unit (a surrogate pair is 2 units for 4 bytes).
    const room = line.length * 3;
    if (this.length + room > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.length + room, this.buffer.length * 2));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.length += this.buffer.write(line, this.length);
    this.rows += 1;
  }

  /** The batch's bytes; valid until the next {@link clear} (the caller waits for its COPY before that). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  clear(): void {
    this.length = 0;
    this.rows = 0;
  }
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
