import { createHash, type Hash } from 'node:crypto';
import { FileChunks } from '../reports/fileChunks.js';
import type { PartnerRow } from '../reports/partnerRow.js';

/** sha256 (hex) of a file's bytes, read a chunk at a time: the same file always gives the same checksum. */
export async function fileChecksum(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of new FileChunks(file)) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * sha256 of rows as we understood them, for sources that have no file (API listings and lookups): one JSON
 * line per row, fields in a fixed order, amounts as the exact decimal strings and times in ISO 8601 UTC.
 */
export class RowChecksum {
  private readonly hash: Hash = createHash('sha256');

  add(row: PartnerRow): void {
    this.hash.update(
      `${JSON.stringify([
        row.line,
        row.reference,
        row.partnerReference,
        row.amount,
        row.currency,
        row.executedAt?.toISOString() ?? null,
        // Only when not an execution, so the checksum of a listing without row kinds stays what it was.
        ...(row.kind === undefined || row.kind === 'execution' ? [] : [row.kind]),
      ])}\n`,
    );
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
