import type { ClaimOrderMode } from '../../src/ledger/claimOrder.js';
import { createLedger } from '../../src/ledger/createLedger.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import type { LedgerOptions } from '../../src/ledger/options.js';
import type { Logger } from '../../src/shared/logger.js';

/** A logger that records entries, so tests can assert what was (and was not) logged. */
export function capturingLogger(entries: { level: string; object: object; message: string }[] = []): Logger {
  const make = (bindings: Record<string, unknown>): Logger => ({
    debug: (object, message) => entries.push({ level: 'debug', object: { ...bindings, ...object }, message }),
    info: (object, message) => entries.push({ level: 'info', object: { ...bindings, ...object }, message }),
    warn: (object, message) => entries.push({ level: 'warn', object: { ...bindings, ...object }, message }),
    error: (object, message) => entries.push({ level: 'error', object: { ...bindings, ...object }, message }),
    child: (more) => make({ ...bindings, ...more }),
  });
  return make({});
}

/** A ledger on a test database; the schema is already there (cloned template). */
export function testLedger(url: string, options: Omit<LedgerOptions, 'databaseUrl'> = {}): Promise<Ledger> {
  return createLedger({ databaseUrl: url, migrate: false, logger: capturingLogger(), ...options });
}

/** The two fixed claim orders (src/ledger/claimOrder.ts): the claim's tests run under each. */
export const CLAIM_ORDERS: readonly ClaimOrderMode[] = ['insert-first', 'read-first'];
