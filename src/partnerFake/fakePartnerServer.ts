import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A fake payment partner on 127.0.0.1, for tests and the demo: it executes charges (and, by default,
 * cannot deduplicate them, like the partners this project exists for), lists what it executed, looks
 * charges up by reference, and misbehaves on demand in the ways real partners do.
 *
 * Endpoints (all require `Authorization: Bearer <token>` when `token` is set, else 401):
 * - `POST /v1/charges` `{ reference, amount, currency }` -> 201 `{ id, reference, amount, currency, executed_at }`;
 *   422 on a bad payload. `Idempotency-Key` is honoured only with `honoursKey: true` (same key and payload
 *   replays the first charge, a different payload is 409).
 * - `GET /v1/settlements?from&to&cursor&limit` -> `{ data, next_cursor }`, executions with `from <= executed_at < to`
 *   in execution order; or with `?page&size` -> `{ data, page, size, total }`. 400 on bad parameters.
 * - `GET /v1/charges?reference=X` -> `{ data }` (possibly empty).
 * - `GET /v1/references/{reference}` -> `{ data }`, or 404 when the reference was never charged.
 */
export async function startFakePartner(options: FakePartnerOptions = {}): Promise<FakePartner> {
  const pageSize = options.pageSize ?? 100;
  const now = options.now ?? (() => new Date());
  const executions: FakeExecution[] = [];
  const byKey = new Map<string, { fingerprint: string; execution: FakeExecution }>();
  const queued: FakeFault[] = [];
  let faultFn: ((request: FakeRequest) => FakeFault | undefined) | undefined;
  let requests = 0;
  let nextId = 1;
  const idPrefix = options.idPrefix ?? 'ch_';
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closing: Promise<void> | undefined;

  const execute = (charge: Omit<FakeExecution, 'id'>): FakeExecution => {
    const execution = { id: `${idPrefix}${nextId++}`, ...charge };
    executions.push(execution);
    return execution;
  };

  /** The partner's normal behaviour; POST charges execute here, so faults choose whether to call it. */
  const handle = (request: FakeRequest, body: string): Reply => {
    if (options.token !== undefined && request.headers.authorization !== `Bearer ${options.token}`) {
      return { status: 401, body: { error: 'unauthorized' } };
    }
    const { method, path, query } = request;
    if (method === 'POST' && path === '/v1/charges') return charge(body, request.headers);
    if (method === 'GET' && path === '/v1/settlements') return list(query);
    if (method === 'GET' && path === '/v1/charges') {
      const reference = query.get('reference');
      if (!reference) return { status: 400, body: { error: 'reference is required' } };
      return { status: 200, body: { data: executions.filter((e) => e.reference === reference).map(toJson) } };
    }
    const byReference = /^\/v1\/references\/([^/]+)$/.exec(path);
    if (method === 'GET' && byReference) {
      const reference = decodeURIComponent(byReference[1]);
      const found = executions.filter((e) => e.reference === reference);
      if (found.length === 0) return { status: 404, body: { error: 'not_found' } };
      return { status: 200, body: { data: found.map(toJson) } };
    }
    return { status: 404, body: { error: 'no such endpoint' } };
  };

  const charge = (body: string, headers: IncomingHttpHeaders): Reply => {
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      return { status: 400, body: { error: 'body is not JSON' } };
    }
    const { reference, amount, currency } = (payload ?? {}) as Record<string, unknown>;
    if (typeof reference !== 'string' || reference === '') {
      return { status: 422, body: { error: 'reference must be a non-empty string' } };
    }
    // Amounts are strings end to end; a JSON number is refused so a float never sneaks in.
    if (typeof amount !== 'string' || !/^-?\d+(\.\d+)?$/.test(amount)) {
      return { status: 422, body: { error: 'amount must be a decimal string such as "12.50"' } };
    }
    if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) {
      return { status: 422, body: { error: 'currency must be an ISO 4217 code such as "BRL"' } };
    }
    const key = headers['idempotency-key'];
    if (options.honoursKey && typeof key === 'string') {
      const fingerprint = JSON.stringify([reference, amount, currency]);
      const earlier = byKey.get(key);
      if (earlier && earlier.fingerprint !== fingerprint) {
        return { status: 409, body: { error: 'idempotency key reused with a different payload' } };
      }
      if (earlier)
        return { status: 201, body: toJson(earlier.execution), headers: { 'idempotent-replayed': 'true' } };
      const execution = execute({
        reference,
        amount,
        currency,
        executedAt: now().toISOString(),
        idempotencyKey: key,
      });
      byKey.set(key, { fingerprint, execution });
      return { status: 201, body: toJson(execution) };
    }
    const execution = execute({
      reference,
      amount,
      currency,
      executedAt: now().toISOString(),
      ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
    });
    return { status: 201, body: toJson(execution) };
  };

  const list = (query: URLSearchParams): Reply => {
    const from = readInstant(query.get('from'));
    const to = readInstant(query.get('to'));
    if (from === null || to === null) {
      return { status: 400, body: { error: 'from and to must be ISO 8601 date-times' } };
    }
    // Stable sort: executions at the same instant keep the order they were executed in.
    const matching = executions
      .filter((e) => {
        const at = Date.parse(e.executedAt);
        return (from === undefined || at >= from) && (to === undefined || at < to);
      })
      .sort((a, b) => Date.parse(a.executedAt) - Date.parse(b.executedAt));

    if (query.has('page')) {
      const page = Number(query.get('page'));
      const size = query.has('size') ? Number(query.get('size')) : pageSize;
      if (!Number.isInteger(page) || page < 1 || !Number.isInteger(size) || size < 1) {
        return { status: 400, body: { error: 'page and size must be positive integers' } };
      }
      const data = matching.slice((page - 1) * size, page * size).map(toJson);
      return { status: 200, body: { data, page, size, total: matching.length } };
    }

    const limit = query.has('limit') ? Number(query.get('limit')) : pageSize;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      return { status: 400, body: { error: 'limit must be an integer from 1 to 1000' } };
    }
    const cursor = query.get('cursor');
    let offset = 0;
    if (cursor !== null) {
      const decoded = /^o:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
      if (!decoded) return { status: 400, body: { error: 'invalid cursor' } };
      offset = Number(decoded[1]);
    }
    const data = matching.slice(offset, offset + limit).map(toJson);
    const next =
      offset + limit < matching.length ? Buffer.from(`o:${offset + limit}`).toString('base64url') : null;
    return { status: 200, body: { data, next_cursor: next } };
  };

  const send = (res: ServerResponse, reply: Reply) => {
    if (res.destroyed) return;
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      'content-type': reply.contentType ?? 'application/json',
      'content-length': Buffer.byteLength(text),
      ...reply.headers,
    });
    res.end(text);
  };

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  /** A TCP reset, as a crashed process or a dropped connection looks to the client (ECONNRESET). */
  const reset = (req: IncomingMessage) => req.socket.resetAndDestroy();

  const server = createServer((req, res) => {
    requests += 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const parsed = new URL(req.url ?? '/', 'http://fake.invalid');
      const request: FakeRequest = {
        n: requests,
        method: req.method ?? 'GET',
        path: parsed.pathname,
        query: parsed.searchParams,
        headers: req.headers,
      };
      const body = Buffer.concat(chunks).toString('utf8');
      const fault = queued.shift() ?? faultFn?.(request);
      if (!fault) return send(res, handle(request, body));
      switch (fault.kind) {
        case 'reset-before':
          return reset(req);
        case 'reset-after':
          handle(request, body);
          return reset(req);
        case 'hang':
          // Executes, then keeps the connection open without a word until close() tears it down.
          handle(request, body);
          return;
        case 'delay': {
          const reply = handle(request, body);
          return later(fault.ms, () => send(res, reply));
        }
        case 'garbage':
          handle(request, body);
          return send(res, { status: 200, body: fault.body, contentType: 'text/html' });
        case 'status': {
          if (fault.execute) handle(request, body);
          return send(res, {
            status: fault.status,
            body: fault.body ?? { error: `injected ${fault.status}` },
            headers: fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : undefined,
          });
        }
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    get executions() {
      return executions;
    },
    get requests() {
      return requests;
    },
    failNext(n, fault) {
      for (let i = 0; i < n; i += 1) queued.push(fault);
    },
    setFault(fn) {
      faultFn = fn;
    },
    seed(rows) {
      for (const row of rows) {
        const executedAt = typeof row.executedAt === 'string' ? row.executedAt : row.executedAt.toISOString();
        const execution = { ...row, id: row.id ?? `${idPrefix}${nextId++}`, executedAt };
        executions.push(execution);
      }
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        // Hanging and keep-alive connections would otherwise hold the server (and mocha) open.
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

export interface FakePartnerOptions {
  /** @default 0 (a free port chosen by the system) */
  port?: number;
  /** When set, every endpoint wants `Authorization: Bearer <token>`. @default undefined (no auth) */
  token?: string;
  /** Page size of listings when the request does not say. @default 100 */
  pageSize?: number;
  /**
   * Whether `Idempotency-Key` deduplicates charges. Off, the fake charges again on every request, like
   * the partners that cannot deduplicate.
   * @default false
   */
  honoursKey?: boolean;
  /**
   * Prefix of the execution ids it hands out. Real partner ids never repeat; a fake restarted against the
   * same database (the demo, day after day) must not repeat them either.
   * @default 'ch_'
   */
  idPrefix?: string;
  /** The fake's clock, for `executed_at`. @default () => new Date() */
  now?: () => Date;
}

/** One charge the fake executed (or was seeded with). Amounts are decimal strings, never numbers. */
export interface FakeExecution {
  id: string;
  reference: string;
  amount: string;
  currency: string;
  /** ISO 8601 UTC. */
  executedAt: string;
  /** The `Idempotency-Key` header the charge came with, if any. */
  idempotencyKey?: string;
}

/** What a fault function sees about each request. */
interface FakeRequest {
  /** 1-based number of the request since the fake started. */
  n: number;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

/**
 * A misbehaviour for one request. Whether the charge is executed is part of each fault, because that is
 * exactly what the caller cannot see:
 * - `status`: answer this status (not executed, unless `execute: true`), with `Retry-After` if given;
 * - `delay`: execute now, answer `ms` later;
 * - `reset-before`: reset the connection without executing;
 * - `reset-after`: execute, then reset the connection without answering;
 * - `garbage`: execute, then answer 200 with this body as `text/html`;
 * - `hang`: execute and never answer (until `close()`).
 */
export type FakeFault =
  | { kind: 'status'; status: number; retryAfter?: number; body?: string; execute?: boolean }
  | { kind: 'delay'; ms: number }
  | { kind: 'reset-before' }
  | { kind: 'reset-after' }
  | { kind: 'garbage'; body: string }
  | { kind: 'hang' };

export interface FakePartner {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  readonly url: string;
  /** Everything executed (including seeded rows), in order; the live array. */
  readonly executions: readonly FakeExecution[];
  /** Requests received so far, of any kind, faulted or not. */
  readonly requests: number;
  /** The next `n` requests, whatever they are, suffer `fault` (before any `setFault` function is asked). */
  failNext(n: number, fault: FakeFault): void;
  /** Asked for every request not taken by `failNext`; `undefined` (as argument or answer) means behave. */
  setFault(fn: ((request: FakeRequest) => FakeFault | undefined) | undefined): void;
  /** Preloads executions for listings and lookups; ids are generated when not given. */
  seed(
    rows: Array<Omit<FakeExecution, 'id' | 'executedAt'> & { id?: string; executedAt: string | Date }>,
  ): void;
  /** Stops listening and tears down every connection, hanging ones included. Safe to call twice. */
  close(): Promise<void>;
}

interface Reply {
  status: number;
  body: string | object;
  contentType?: string;
  headers?: Record<string, string>;
}

function toJson(execution: FakeExecution) {
  return {
    id: execution.id,
    reference: execution.reference,
    amount: execution.amount,
    currency: execution.currency,
    executed_at: execution.executedAt,
  };
}

/** undefined when absent, null when unreadable, else epoch milliseconds. */
function readInstant(value: string | null): number | null | undefined {
  if (value === null) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : at;
}
