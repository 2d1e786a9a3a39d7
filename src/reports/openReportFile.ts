import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ReportFormatError } from './errors/ReportFormatError.js';
import { FILE_CHUNK_BYTES, FileChunks } from './fileChunks.js';

/** A report file's bytes, decompressed when it is gzipped, a chunk at a time. */
export interface ReportFileBytes extends AsyncIterable<Buffer> {
  /** Bytes handed out so far (decompressed ones for a gzipped file). */
  readonly bytesRead: number;
  /** Closes the file now (an early exit must not wait for garbage collection); safe to call twice. */
  close(): Promise<void>;
}

/**
 * Opens a report file for reading, streamed: a gzipped file (its first bytes are gzip's magic `1f 8b`, or
 * its name ends in `.gz`) is decompressed on the fly with node:zlib, chunk by chunk, so memory stays flat
 * whatever the size; any other file is read as it is ({@link FileChunks}). Partners deliver large reports
 * compressed (`STL-20261130.01.009.CSV.gz`), and decompressing them by hand first would leave the run reading
 * a file nobody checksummed. A gzipped file that is cut short or corrupt throws ReportFormatError: a
 * truncated report is never read as a shorter complete one.
 *
 * Chunks of a plain file are views into one reused buffer, valid until the next one is asked for (see
 * FileChunks); a consumer must be done with each before it continues, whichever kind the file is.
 */
export function openReportFile(file: string): ReportFileBytes {
  return new ReportFile(file);
}

const GZIP_MAGIC = [0x1f, 0x8b];

class ReportFile implements ReportFileBytes {
  bytesRead = 0;
  private readonly chunks: FileChunks;
  private gunzip: ReturnType<typeof createGunzip> | undefined;

  constructor(private readonly file: string) {
    this.chunks = new FileChunks(file);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    const iterator = this.chunks[Symbol.asyncIterator]();
    try {
      const first = await iterator.next();
      if (first.done) return;
      const gzipped =
        (first.value[0] === GZIP_MAGIC[0] && first.value[1] === GZIP_MAGIC[1]) ||
        this.file.toLowerCase().endsWith('.gz');
      if (!gzipped) {
        this.bytesRead += first.value.length;
        yield first.value;
        for (;;) {
          const next = await iterator.next();
          if (next.done) return;
          this.bytesRead += next.value.length;
          yield next.value;
        }
      }
      yield* this.decompressed(first.value, iterator);
    } finally {
      await this.close();
    }
  }

  private async *decompressed(first: Buffer, iterator: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
    // zlib keeps a written chunk until it has consumed it, and FileChunks reuses its buffer: each
    // compressed chunk is copied (one chunk at a time, so memory stays one chunk and zlib's window).
    async function* compressed() {
      yield Buffer.from(first);
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        yield Buffer.from(next.value);
      }
    }
    const gunzip = createGunzip({ chunkSize: FILE_CHUNK_BYTES });
    this.gunzip = gunzip;
    // A read error of the file destroys gunzip with it, so the loop below throws it.
    pipeline(Readable.from(compressed()), gunzip, () => {});
    try {
      for await (const chunk of gunzip as AsyncIterable<Buffer>) {
        this.bytesRead += chunk.length;
        yield chunk;
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException)?.code;
      if (typeof code === 'string' && code.startsWith('Z_')) {
        throw new ReportFormatError(
          `${this.file}: not a complete gzip file (${(error as Error).message}): it was cut short or is corrupt, and nothing of it is applied`,
          { file: this.file },
        );
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    this.gunzip?.destroy();
    this.gunzip = undefined;
    await this.chunks.close();
  }
}
