import { createServer, type Server } from 'node:http';
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import { explainListenError } from './listenPort.js';

/** A listening metrics endpoint and how to stop it. */
export interface MetricsServer {
  /** `http://host:port`, with the port actually bound (for `--metrics-port 0`). */
  readonly url: string;
  close(): Promise<void>;
}

/** How long /healthz waits for the database before it says the worker is not healthy. */
const HEALTH_TIMEOUT_MS = 2_000;

/**
 * `GET /metrics`: the registry in Prometheus' text format. `GET /healthz`: 200 `{"status":"ok"}` when the
 * database answers within 2 s, else 503 with the reason (a worker that cannot reach its database reconciles
 * nothing, so it is not healthy). Plain node:http: two read-only routes need no framework, and nothing here
 * is secret beyond partner names (bind it to a private interface).
 */
export async function startMetricsServer(options: {
  registry: Registry;
  pool: Pool;
  port: number;
  host: string;
}): Promise<MetricsServer> {
  const { registry, pool, port, host } = options;
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
    } else if (path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`),
      );
    } else if (path === '/healthz') {
      databaseAnswers(pool).then(
        () => json(response, 200, { status: 'ok' }),
        (error: Error) => json(response, 503, { status: 'unavailable', reason: error.message }),
      );
    } else {
      json(response, 404, { error: 'use /metrics or /healthz' });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(explainListenError(error, port, host)));
    server.listen(port, host, resolve);
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function databaseAnswers(pool: Pool): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      pool.query('SELECT 1'),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the database did not answer in ${HEALTH_TIMEOUT_MS} ms`)),
          HEALTH_TIMEOUT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function json(response: import('node:http').ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify(body)}\n`);
}
