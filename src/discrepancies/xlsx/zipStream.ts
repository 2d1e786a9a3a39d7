import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, createDeflateRaw } from 'node:zlib';
import { ZipLimitError } from '../errors/ZipLimitError.js';
import { writeChunk } from '../writeChunk.js';

/** Signatures of the records of a ZIP file (APPNOTE.TXT, sections 4.3.7, 4.3.9, 4.3.12, 4.3.16). */
const LOCAL_FILE_HEADER = 0x04034b50;
const DATA_DESCRIPTOR = 0x08074b50;
const CENTRAL_DIRECTORY_HEADER = 0x02014b50;
const END_OF_CENTRAL_DIRECTORY = 0x06054b50;

/** 2.0: deflate and data descriptors; nothing of ZIP64 (4.5) or later. */
const VERSION = 20;
/** Bit 3: CRC and sizes follow the data in a data descriptor; bit 11: the name is UTF-8. */
const FLAGS = 0x0008 | 0x0800;
const DEFLATE = 8;

/**
 * The largest size or offset a classic ZIP field holds: 0xFFFFFFFF itself means "look in the ZIP64 extra
 * field", which this writer does not write, so every size and offset must stay below it.
 */
const ZIP32_LIMIT = 0xffffffff;
const MAX_ENTRIES = 0xffff;

interface CentralEntry {
  name: Buffer;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
}

/**
 * A ZIP archive written as it goes, for a single pass over data that does not fit in memory: each entry is
 * a local header, its deflated bytes (node:zlib, raw deflate) and a data descriptor carrying its CRC-32
 * (`zlib.crc32`) and sizes, so nothing is buffered or written twice; the central directory (one small
 * record per entry) is written by {@link finish}. Writes wait for the output to drain (backpressure), so
 * memory stays flat however large an entry is.
 *
 * Limits (classic ZIP, no ZIP64): each entry under 4 GiB before and after compression, the whole archive
 * under 4 GiB, at most 65,535 entries. Passing one throws {@link ZipLimitError} as soon as it is known,
 * before the central directory, so the output is never a well-formed archive that lies about its content.
 * An XLSX of Excel's 1,048,576 rows stays far below 4 GiB unless its cells are tens of kilobytes each.
 */
export class ZipStream {
  private offset = 0;
  private readonly entries: CentralEntry[] = [];
  private readonly time: number;
  private readonly date: number;
  private readonly limit: number;

  /**
   * `modifiedAt` is the time every entry carries (MS-DOS time, to 2 s, in UTC: ZIP records no zone);
   * `limit` lowers the 4 GiB limit, for tests that prove the refusal without writing gigabytes.
   */
  constructor(
    private readonly out: Writable,
    options: { modifiedAt?: Date; limit?: number } = {},
  ) {
    const at = options.modifiedAt ?? new Date();
    this.time = (at.getUTCHours() << 11) | (at.getUTCMinutes() << 5) | (at.getUTCSeconds() >> 1);
    this.date =
      ((Math.max(1980, at.getUTCFullYear()) - 1980) << 9) | ((at.getUTCMonth() + 1) << 5) | at.getUTCDate();
    this.limit = Math.min(options.limit ?? ZIP32_LIMIT, ZIP32_LIMIT);
  }

  /** Adds an entry named `name` (a path inside the archive) holding `content`, read once, in order. */
  async addEntry(
    name: string,
    content: string | Iterable<string | Buffer> | AsyncIterable<string | Buffer>,
  ): Promise<void> {
    if (this.entries.length >= MAX_ENTRIES)
      throw new ZipLimitError(`a ZIP archive without ZIP64 holds at most ${MAX_ENTRIES} entries`);
    const nameBytes = Buffer.from(name, 'utf8');
    const offset = this.offset;
    this.checkArchiveSize(offset, name);
    const header = Buffer.alloc(30);
    header.writeUInt32LE(LOCAL_FILE_HEADER, 0);
    header.writeUInt16LE(VERSION, 4);
    header.writeUInt16LE(FLAGS, 6);
    header.writeUInt16LE(DEFLATE, 8);
    header.writeUInt16LE(this.time, 10);
    header.writeUInt16LE(this.date, 12);
    // CRC-32 and both sizes (14..25) stay 0 here: bit 3 says they are in the data descriptor.
    header.writeUInt16LE(nameBytes.length, 26);
    await this.write(Buffer.concat([header, nameBytes]));

    let crc = 0;
    let size = 0;
    let compressed = 0;
    const limit = this.limit;
    async function* measured() {
      for await (const piece of typeof content === 'string' ? [content] : content) {
        const bytes = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
        crc = crc32(bytes, crc);
        size += bytes.length;
        if (size >= limit)
          throw new ZipLimitError(`${name} reached ${limit} bytes, the ZIP limit without ZIP64`);
        yield bytes;
      }
    }
    // The compressed bytes go to `out` through write() (backpressure, offsets), never piped into it: a
    // pipeline per entry would leave its listeners on `out` behind.
    const sink = async (deflated: AsyncIterable<Buffer>) => {
      for await (const chunk of deflated) {
        compressed += chunk.length;
        if (compressed >= limit)
          throw new ZipLimitError(`${name} reached ${limit} bytes compressed, the ZIP limit without ZIP64`);
        await this.write(chunk);
      }
    };
    await pipeline(Readable.from(measured()), createDeflateRaw(), sink);

    const descriptor = Buffer.alloc(16);
    descriptor.writeUInt32LE(DATA_DESCRIPTOR, 0);
    descriptor.writeUInt32LE(crc >>> 0, 4);
    descriptor.writeUInt32LE(compressed, 8);
    descriptor.writeUInt32LE(size, 12);
    await this.write(descriptor);
    this.entries.push({ name: nameBytes, crc: crc >>> 0, compressed, size, offset });
  }

  /** Writes the central directory and its end record; the archive is complete. Does not end `out`. */
  async finish(): Promise<void> {
    const start = this.offset;
    this.checkArchiveSize(start, 'the central directory');
    const records = this.entries.map((entry) => {
      const record = Buffer.alloc(46);
      record.writeUInt32LE(CENTRAL_DIRECTORY_HEADER, 0);
      record.writeUInt16LE(VERSION, 4); // made by: MS-DOS (0) / 2.0
      record.writeUInt16LE(VERSION, 6);
      record.writeUInt16LE(FLAGS, 8);
      record.writeUInt16LE(DEFLATE, 10);
      record.writeUInt16LE(this.time, 12);
      record.writeUInt16LE(this.date, 14);
      record.writeUInt32LE(entry.crc, 16);
      record.writeUInt32LE(entry.compressed, 20);
      record.writeUInt32LE(entry.size, 24);
      record.writeUInt16LE(entry.name.length, 28);
      // Extra field, comment, disk number, internal and external attributes (30..41): none, all 0.
      record.writeUInt32LE(entry.offset, 42);
      return Buffer.concat([record, entry.name]);
    });
    const directory = Buffer.concat(records);
    await this.write(directory);
    this.checkArchiveSize(this.offset, 'the end of the central directory');
    const end = Buffer.alloc(22);
    end.writeUInt32LE(END_OF_CENTRAL_DIRECTORY, 0);
    end.writeUInt16LE(this.entries.length, 8);
    end.writeUInt16LE(this.entries.length, 10);
    end.writeUInt32LE(directory.length, 12);
    end.writeUInt32LE(start, 16);
    await this.write(end);
  }

  private checkArchiveSize(offset: number, what: string): void {
    if (offset >= this.limit)
      throw new ZipLimitError(`${what} would start at byte ${offset}, past the ZIP limit without ZIP64`);
  }

  private async write(bytes: Buffer): Promise<void> {
    await writeChunk(this.out, bytes);
    this.offset += bytes.length;
  }
}
