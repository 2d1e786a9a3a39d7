import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createReviewServer } from '../../review/createReviewServer.js';
import { UsageError } from '../errors/UsageError.js';
import { ensurePortFree, explainListenError, parsePort } from '../listenPort.js';
import { openCliDatabase } from '../openCliDatabase.js';

export const serveUsage =
  'intent-ledger serve [--port 3000] [--host 127.0.0.1] [--trust-proxy | --trusted-proxy ADDRESS ...] ' +
  '[--identity-header NAME] ' +
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
  const trustProxy = trustedProxies(values['trust-proxy'], values['trusted-proxy']);
  // A header naming the person is as good as a password: honoured from every peer (`--trust-proxy`), anyone
  // who can reach the port could sign in as anybody. Only the proxy's own addresses may name people.
  if (values['identity-header'] !== undefined && !Array.isArray(trustProxy))
    throw new UsageError(
      "--identity-header needs --trusted-proxy ADDRESS (the authenticating proxy's own address, repeatable): " +
        'only that proxy may name people, and with --trust-proxy alone any client could',
    );
  const threshold = values['approval-threshold'];
  if (threshold !== undefined && !/^\d+(\.\d+)?$/.test(threshold))
    throw new UsageError(`--approval-threshold must be a decimal amount such as 10000.00 (got ${threshold})`);
  await ensurePortFree(port, host);
  const database = await openCliDatabase();
  const server = createReviewServer({
    pool: database.pool,
    token,
    logger,
    trustProxy,
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
        // The same, trusting only these peers (IP addresses): what --identity-header needs.
        'trusted-proxy': { type: 'string', multiple: true },
        // Four eyes: above this amount at risk, resolving or dismissing needs a second resolver.
        'approval-threshold': { type: 'string' },
        // An authenticating proxy's header naming the person (honoured only from a --trusted-proxy address).
        'identity-header': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * `trustProxy` for the review server: false, true (`--trust-proxy`: every peer, for a proxy that is the only
 * way in), or the `--trusted-proxy` addresses, each checked to be an IP address (fastify compares peers to
 * them; a host name would never match, and trust nobody while seeming to).
 */
function trustedProxies(all: boolean | undefined, addresses: string[] | undefined): boolean | string[] {
  if (addresses === undefined) return all === true;
  if (all) throw new UsageError('give --trust-proxy (every peer) or --trusted-proxy ADDRESS, not both');
  const list = addresses.flatMap((text) => text.split(',')).map((text) => text.trim());
  const wrong = list.filter((address) => isIP(address) === 0);
  if (wrong.length > 0 || list.length === 0)
    throw new UsageError(
      `--trusted-proxy takes IP addresses (10.0.0.5, ::1), got ${wrong.map((w) => JSON.stringify(w)).join(', ') || 'none'}`,
    );
  return list;
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
