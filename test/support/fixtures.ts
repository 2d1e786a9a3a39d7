import { Pool } from 'pg';
import type { IntentSpec } from '../../src/shared/types.js';

/** A spec factory with keys unique to one test file (`prefix`), so tests never share an intent by accident. */
export function specFactory(prefix: string): (overrides?: Partial<IntentSpec>) => IntentSpec {
  let counter = 0;
  return (overrides = {}) => {
    const n = ++counter;
    return {
      partner: 'acme-pay',
      operation: 'charge',
      key: `${prefix}-${n}:charge`,
      payload: { card: 'tok_1', amount: '10.00', n },
      reference: `${prefix}-${n}`,
      amount: '10.00',
      currency: 'BRL',
      ...overrides,
    };
  };
}

/** What a promise ended with, without throwing: for counting outcomes of many concurrent calls. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

export function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** The error a promise rejects with; fails when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  const result = await settle(promise);
  if (result.ok) throw new Error(`expected a rejection, got ${JSON.stringify(result.value)}`);
  return result.error;
}

/** A promise with its resolve/reject exposed: a partner that answers when the test says so. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` every `everyMs` until it returns something truthy, and returns it; fails after `timeoutMs`
 * naming `what`. For effects that happen in the background (late answers), never a fixed sleep.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 5_000,
  everyMs = 10,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(everyMs);
  }
}

/** A plain pg pool on the test database, for reading and tampering with rows behind the ledger's back. */
export function sqlPool(url: string, max = 4): Pool {
  const pool = new Pool({ connectionString: url, max });
  pool.on('error', () => undefined); // an idle client cut by the server at teardown is not a test failure
  return pool;
}

/** Sleeps until PostgreSQL's clock is past the lease of intent `intentId` (compared in SQL, never local time). */
export async function waitForLeaseEnd(sql: Pool, intentId: string): Promise<void> {
  const { rows } = await sql.query<{ ms: number }>(
    `SELECT greatest(0, ceil(extract(epoch FROM lease_expires_at - clock_timestamp()) * 1000))::int AS ms
       FROM intents WHERE id = $1`,
    [intentId],
  );
  if (rows.length === 0) throw new Error(`intent ${intentId} does not exist`);
  await delay(rows[0].ms + 5);
  await waitFor(
    `the lease of intent ${intentId} to end`,
    async () =>
      (await sql.query('SELECT 1 FROM intents WHERE id = $1 AND lease_expires_at <= now()', [intentId]))
        .rowCount,
    2_000,
  );
}
