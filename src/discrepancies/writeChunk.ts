import type { Writable } from 'node:stream';

/**
 * Writes `text` (or bytes) and waits for `drain` when the stream asks for it (backpressure). Rejects instead of
 * waiting forever when the stream fails or closes meanwhile (a reader that went away: `| head`, a closed
 * HTTP response).
 */
export async function writeChunk(out: Writable, text: string | Uint8Array): Promise<void> {
  if (out.destroyed || out.writableEnded) throw out.errored ?? new Error('the output was closed');
  if (out.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const cleanup = () => {
      out.off('drain', onDrain);
      out.off('error', onError);
      out.off('close', onClose);
    };
    const onDrain = () => {
      cleanup();
      resolve();
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      cleanup();
      reject(out.errored ?? new Error('the output was closed'));
    };
    out.on('drain', onDrain);
    out.on('error', onError);
    out.on('close', onClose);
  });
}
