import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { expect } from 'chai';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource } from '../../src/reconcile/reconcilerConfig.js';
import type { ReconciliationResult } from '../../src/reconcile/reconciliationResult.js';
import {
  dbNow,
  fakePartnerReconciler,
  intentRow,
  minutes,
  partnerName,
  place,
  snapshot,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

/** A hostile partner on loopback: `handle` answers every request; sockets are closed with the server. */
async function hostilePartner(
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((request, response) => {
    requests += 1;
    handle(request, response);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The highest RSS seen while `work` runs, sampled every 10 ms, and how far it rose above the start. */
async function peakRss<T>(work: () => Promise<T>): Promise<{ result: T; riseBytes: number }> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, riseBytes: peak - start };
  } finally {
    clearInterval(timer);
  }
}

const MiB = 1024 * 1024;

describe('reconcile: partner APIs cannot exhaust the worker (body, pages and listing deadline caps)', function () {
  this.timeout(120_000);
  const fx = useReconcileFixture('rec_api_limits');
  let partner: string;
  let intentId: string;
  let closeServer: (() => Promise<void>) | undefined;

  beforeEach(async () => {
    partner = partnerName('limits');
    intentId = await unknownIntent(fx.ledger, spec(partner, `${partner}-stuck`));
    await place(fx.sql, intentId, { startedAt: minutes(await dbNow(fx.sql), -180) });
  });
  afterEach(async () => {
    await closeServer?.();
    closeServer = undefined;
  });

  /** Runs the reconciler against `url`; checks the run failed, recorded as such, with nothing applied. */
  async function failedRun(
    url: string,
    source: Partial<ReconcilerApiSource> = {},
  ): Promise<{ run: ReconciliationResult; ms: number }> {
    const before = await snapshot(fx.sql);
    const started = Date.now();
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: fakePartnerReconciler(partner, { baseUrl: url, retries: 0, ...source }),
    });
    const ms = Date.now() - started;
    expect(run.status).to.equal('failed');
    expect(await snapshot(fx.sql)).to.deep.equal(before);
    expect((await intentRow(fx.sql, intentId)).status).to.equal('unknown');
    const stored = await fx.sql.query('SELECT status, error FROM reconciliation_runs WHERE id = $1', [
      run.runId,
    ]);
    expect(stored.rows).to.deep.equal([{ status: 'failed', error: run.error }]);
    return { run, ms };
  }

  it('a chunked body without content-length that never ends is cut at maxBodyBytes (default 32 MiB), RSS bounded', async () => {
    let sent = 0;
    const chunk = Buffer.from(`${JSON.stringify({ id: 'x', reference: 'y'.repeat(200) })},`.repeat(300));
    const fake = await hostilePartner((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }); // chunked: no content-length
      response.write('{"data":[');
      // Up to 2 GB, with backpressure, until the reader goes away.
      const pump = () => {
        while (!response.destroyed && sent < 2048 * MiB) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
      };
      pump();
    });
    closeServer = fake.close;
    const { result, riseBytes } = await peakRss(() => failedRun(fake.url, { timeoutMs: 60_000 }));
    expect(result.run.error).to.equal(
      `partner ${partner}: answered more than 33554432 bytes in one response (maxBodyBytes): the read was ` +
        'stopped there; ask for smaller pages (pagination limit or size) or raise maxBodyBytes',
    );
    expect(fake.requests()).to.equal(1);
    // The partner was stopped soon after the cap (socket buffers aside), nowhere near its 2 GB.
    expect(sent).to.be.below(128 * MiB);
    // 32 MiB of body plus its chunks: the worker grew by well under what the partner tried to push.
    expect(riseBytes, `RSS rose ${Math.round(riseBytes / MiB)} MiB`).to.be.below(160 * MiB);
    console.log(
      `    body cap: partner pushed ${Math.round(sent / MiB)} MiB, RSS rose ${Math.round(riseBytes / MiB)} MiB, ${result.ms} ms`,
    );
  });

  it('maxBodyBytes is configurable, and a content-length above it is refused before reading', async () => {
    let written = 0;
    const fake = await hostilePartner((_request, response) => {
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(2 * 1024 * MiB),
      });
      const pump = () => {
        while (!response.destroyed && written < 2048 * MiB) {
          written += 65536;
          if (!response.write(Buffer.alloc(65536, 0x20))) return void response.once('drain', pump);
        }
      };
      pump();
    });
    closeServer = fake.close;
    const { run, ms } = await failedRun(fake.url, { maxBodyBytes: 1 * MiB });
    expect(run.error).to.match(/answered more than 1048576 bytes in one response \(maxBodyBytes\)/);
    expect(ms).to.be.below(5_000);

    // 0 is not a cap: a configuration error, as a failed run.
    const zero = await failedRun(fake.url, { maxBodyBytes: 0 });
    expect(zero.run.error).to.match(/maxBodyBytes must be a positive integer/);
  });

  it('ever-new cursors end at maxPages with a clear reason', async () => {
    let n = 0;
    const fake = await hostilePartner((_request, response) => {
      n += 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ data: [], next_cursor: `c-${n}-${Math.random()}` }));
    });
    closeServer = fake.close;
    const { run } = await failedRun(fake.url, { maxPages: 25 });
    expect(run.error).to.equal(
      `partner ${partner}: the listing goes on past 25 pages (maxPages) and was stopped: the partner may be ` +
        'handing out endless cursors; narrow the window, ask for bigger pages or raise maxPages',
    );
    expect(fake.requests()).to.equal(25);
  });

  it('ever-new cursors, slowly: the listing deadline (listingTimeoutMs) stops the run, the request in flight too', async () => {
    let n = 0;
    const fake = await hostilePartner((_request, response) => {
      n += 1;
      // Each page answers within the request timeout, but the listing never ends.
      setTimeout(() => {
        if (response.destroyed) return;
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ data: [], next_cursor: `c-${n}` }));
      }, 120);
    });
    closeServer = fake.close;
    const { run, ms } = await failedRun(fake.url, { listingTimeoutMs: 500 });
    expect(run.error).to.equal(
      `partner ${partner}: the listing took longer than 500 ms (listingTimeoutMs) and was stopped: narrow the ` +
        'window, ask for bigger pages or raise listingTimeoutMs',
    );
    expect(ms).to.be.below(3_000);
    expect(fake.requests()).to.be.within(3, 6);
  });
});
