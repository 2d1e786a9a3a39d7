import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { FILE_CHUNK_BYTES, FileChunks } from '../../src/reports/fileChunks.js';

describe('FileChunks', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'file-chunks-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Open file descriptors of this process (Linux). */
  const openFiles = () => readdirSync('/proc/self/fd').length;

  it('yields every byte, in order, in chunks of FILE_CHUNK_BYTES, counting bytesRead', async () => {
    const bytes = randomBytes(3 * FILE_CHUNK_BYTES + 123);
    const path = join(dir, 'three-and-a-bit');
    writeFileSync(path, bytes);
    const chunks = new FileChunks(path);
    const copies: Buffer[] = [];
    const sizes: number[] = [];
    for await (const chunk of chunks) {
      sizes.push(chunk.length);
      copies.push(Buffer.from(chunk));
    }
    expect(sizes).to.deep.equal([FILE_CHUNK_BYTES, FILE_CHUNK_BYTES, FILE_CHUNK_BYTES, 123]);
    expect(Buffer.concat(copies).equals(bytes)).to.equal(true);
    expect(chunks.bytesRead).to.equal(bytes.length);
  });

  it('reuses one buffer: a chunk kept past the next read holds the next bytes (consumers copy or finish first)', async () => {
    const path = join(dir, 'two-chunks');
    writeFileSync(path, Buffer.concat([Buffer.alloc(FILE_CHUNK_BYTES, 'a'), Buffer.alloc(10, 'b')]));
    const kept: Buffer[] = [];
    for await (const chunk of new FileChunks(path)) kept.push(chunk);
    expect(kept[0].buffer).to.equal(kept[1].buffer);
    expect(kept[0].subarray(0, 10).toString()).to.equal('b'.repeat(10));
  });

  it('gives nothing for an empty file, and closes it', async () => {
    const path = join(dir, 'empty');
    writeFileSync(path, '');
    const before = openFiles();
    const chunks = new FileChunks(path);
    let seen = 0;
    for await (const _ of chunks) seen += 1;
    expect({ seen, bytesRead: chunks.bytesRead, openFiles: openFiles() }).to.deep.equal({
      seen: 0,
      bytesRead: 0,
      openFiles: before,
    });
  });

  it('closes the file when the consumer stops early', async () => {
    const path = join(dir, 'early-exit');
    writeFileSync(path, Buffer.alloc(5 * FILE_CHUNK_BYTES, 'x'));
    const before = openFiles();
    const chunks = new FileChunks(path);
    for await (const _ of chunks) break;
    expect(openFiles()).to.equal(before);
    expect(chunks.bytesRead).to.equal(FILE_CHUNK_BYTES);
  });

  it('fails like fs does for a file that does not exist', async () => {
    const path = join(dir, 'missing.csv');
    let error: NodeJS.ErrnoException | undefined;
    try {
      for await (const _ of new FileChunks(path));
    } catch (caught) {
      error = caught as NodeJS.ErrnoException;
    }
    expect(error?.code).to.equal('ENOENT');
    expect(error?.message).to.contain(path);
  });
});
