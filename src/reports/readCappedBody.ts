import type { Readable } from 'node:stream';

/**
 * The body as text, or null as soon as it would exceed `maxBytes` (a `content-length` above it is refused
 * before any byte is read): `stop` then aborts the request, so at most `maxBytes` plus one chunk is ever
 * held, whatever the partner sends and however it frames it.
 */
export async function readCappedBody(
  body: Readable,
  contentLength: string | undefined,
  maxBytes: number,
  stop: () => void,
): Promise<string | null> {
  if (contentLength !== undefined && /^\d+$/.test(contentLength) && Number(contentLength) > maxBytes) {
    stop();
    body.destroy();
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buffer.length;
    if (size > maxBytes) {
      stop();
      body.destroy();
      return null;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
