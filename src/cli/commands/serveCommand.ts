import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createReviewServer } from '../../review/createReviewServer.js';
import { UsageError } from '../errors/UsageError.js';
import { ensurePortFree, explainListenError, parsePort } from '../listenPort.js';
import { openCliDatabase } from '../openCliDatabase.js';

export const serveUsage =
  'intent-ledger serve [--port 3000] [--host 127.0.0.1] [--trust-proxy] [--identity-header NAME] ' +
  '[--approval-threshold AMOUNT]   ' +
  'the finance review page ' +
  '(token: REVIEW_TOKEN or generated)';

/** Shorter tokens are refused: the token is the only thing between the network and the ledger's money data. */
const MIN_TOKEN_LENGTH = 16;

/**
 * `intent-ledger serve`: the review site for finance. The token comes from `REVIEW_TOKEN`; without it a
 * random one is generated and printed once, here, with the URL (and nowhere else: it is never logged).
 * Runs until SIGINT/SIGTERM.
 */
export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseServeArgs(args);
  const port = parsePort(values.port);
  const host = String(values.host);
  const fromEnv = process.env.REVIEW_TOKEN;
  if (fromEnv !== undefined && fromEnv.length < MIN_TOKEN_LENGTH)
    throw new UsageError(`REVIEW_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`);
  const token = fromEnv ?? randomBytes(24).toString('base64url');

  const logger = pino({
    name: 'intent-ledger-review',
    level: process.env.LOG_LEVEL ?? 'warn',
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', 'token'],
      censor: '[redacted]',
    },
  });
  if (values['identity-header'] !== undefined && !values['trust-proxy'])
    throw new UsageError('--identity-header needs --trust-proxy: only a trusted proxy may name people');
  const threshold = values['approval-threshold'];
  if (threshold !== undefined && !/^\d+(\.\d+)?$/.test(threshold))
    throw new UsageError(`--approval-threshold must be a decimal amount such as 10000.00 (got ${threshold})`);
  await ensurePortFree(port, host);
  const database = await openCliDatabase();
  const server = createReviewServer({
    pool: database.pool,
    token,
    logger,
    trustProxy: values['trust-proxy'] === true,
    approvalThreshold: values['approval-threshold'],
    identityHeader: values['identity-header'],
  });
  try {
    const address = await server
      .listen({ port, host })
      .catch((error: NodeJS.ErrnoException) => Promise.reject(explainListenError(error, port, host)));
    const url = displayUrl(address, host);
    console.log(`review page: ${url}`);
    console.log(
      fromEnv ? 'token: the value of REVIEW_TOKEN' : `token: ${token}   (set REVIEW_TOKEN to choose one)`,
    );
    if (!isLoopback(host))
      console.log(
        `warning: listening on ${host} over plain HTTP; put a TLS proxy in front before anyone uses it over a network`,
      );
    await stopSignal();
    console.log('review page: stopping');
    return 0;
  } finally {
    await server.close();
    await database.close();
  }
}

function parseServeArgs(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        port: { type: 'string', default: '3000' },
        host: { type: 'string', default: '127.0.0.1' },
        // Behind a TLS-terminating proxy that is the only way in: X-Forwarded-* trusted, HSTS sent.
        'trust-proxy': { type: 'boolean', default: false },
        // Four eyes: above this amount at risk, resolving or dismissing needs a second resolver.
        'approval-threshold': { type: 'string' },
        // An authenticating proxy's header naming the person (honoured only with --trust-proxy).
        'identity-header': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `server.listen` answers with the bound address; show the host people asked for when it is a name. */
function displayUrl(address: string, host: string): string {
  const url = new URL(address);
  if (host === '0.0.0.0' || host === '::') url.hostname = 'localhost';
  return `${url.origin}/`;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
