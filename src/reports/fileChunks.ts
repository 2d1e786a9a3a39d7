import { type FileHandle, open } from 'node:fs/promises';

/** Bytes per read: what a file read stream reads at a time (and what the CSV reader's tests assume). */
export const FILE_CHUNK_BYTES = 64 * 1024;

/**
 * A file's bytes a chunk at a time, read into ONE buffer that is reused for every chunk: each chunk is a view
 * that is valid only until the next one is asked for, so a consumer must be done with it (hash it, decode it
 * into a string) before it continues.
 *
 * Why not a read stream: a stream allocates a new buffer per chunk, and V8 frees those only at its next
 * garbage collection, which external memory alone does not hurry. Reading the benchmark's file that way
 * raised the reconcile CLI's resident memory by tens of MB per pass (once for the checksum, once for the
 * rows), memory the allocator then kept; with one reused buffer a pass costs one chunk
 * (docs/PERFORMANCE.md, "Reading a report").
 */
export class FileChunks implements AsyncIterable<Buffer> {
  /** Bytes read so far. */
  bytesRead = 0;
  private handle: FileHandle | undefined;
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly chunkBytes = FILE_CHUNK_BYTES,
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    const buffer = Buffer.allocUnsafe(this.chunkBytes);
    this.handle = await open(this.path, 'r');
    try {
      while (!this.closed) {
        const { bytesRead } = await this.handle.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) return;
        this.bytesRead += bytesRead;
        yield buffer.subarray(0, bytesRead);
      }
    } finally {
      await this.close();
    }
  }

  /** Closes the file now (an early exit must not wait for garbage collection); safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }
}
