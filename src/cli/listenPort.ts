import { createServer } from 'node:net';
import { UsageError } from './errors/UsageError.js';

/** A `--port` value: an integer 0-65535 (0 lets the system choose), or a usage error naming it. */
export function parsePort(value: unknown): number {
  const port = Number(value);
  if (!/^\d{1,5}$/.test(String(value)) || port > 65535)
    throw new UsageError(`--port must be a port number (got ${value})`);
  return port;
}

/**
 * Fails before any work when `port` on `host` cannot be listened on, with a message that says what to do.
 * `npm start` runs a whole simulated day before it serves the review page: finding the port taken only then
 * would waste the day and bury the reason under its output. The port is checked again by the real listen.
 */
export async function ensurePortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => reject(explainListenError(error, port, host)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** A listen failure in words: which port, and the way out when it is taken or not allowed. */
export function explainListenError(error: NodeJS.ErrnoException, port: number, host: string): Error {
  if (error.code === 'EADDRINUSE')
    return new Error(
      `port ${port} on ${host} is already in use (another intent-ledger serve or npm start?): stop it or choose another with --port`,
      { cause: error },
    );
  if (error.code === 'EACCES')
    return new Error(
      `not allowed to listen on port ${port} on ${host}: choose a port above 1023 with --port`,
      {
        cause: error,
      },
    );
  return error;
}
