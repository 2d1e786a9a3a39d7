import type { ClientBase } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { PartnerRow } from '../reports/partnerRow.js';

// How accepted rows travel to `rec_staged` (stage 3): PostgreSQL's COPY text format, a batch at a time.

/** Appends rows (already in COPY text format, see {@link copyLine}) to `rec_staged` with one COPY. */
export async function copyStagedRows(db: ClientBase, text: string | Buffer): Promise<void> {
  const stream = db.query(
    copyFrom(
      'COPY rec_staged (line, reference, partner_reference, amount, currency, executed_at_ms, kind, settlement_amount, settlement_currency, row_id) FROM STDIN',
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
export function copyLine(row: PartnerRow): string {
  return `${row.line}\t${copyText(row.reference)}\t${copyText(row.partnerReference)}\t${row.amount ?? '\\N'}\t${copyText(row.currency)}\t${row.executedAt === null ? '\\N' : row.executedAt.getTime()}\t${row.kind === undefined || row.kind === 'execution' ? '\\N' : row.kind}\t${row.settlementAmount ?? '\\N'}\t${copyText(row.settlementCurrency ?? null)}\t${copyText(row.rowId ?? null)}\n`;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function copyText(value: string | null): string {
  if (value === null) return '\\N';
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (char) => COPY_ESCAPES[char]!) : value;
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
export class CopyBatch {
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
