import type { CallContext, CallResult, PartnerCall } from '../shared/types.js';
import type { AttemptLease } from './leaseTimers.js';

/** How the partner call ended, or that its lease is about to end first. */
export type CallSettled =
  | { kind: 'ok'; value: CallResult }
  | { kind: 'error'; error: unknown }
  /** The call may still answer: `callPromise` is listened to for a late success. */
  | { kind: 'lease-ending'; callPromise: Promise<CallResult> };

/**
 * Calls the partner and waits for its answer or for the lease to be about to end, whichever comes first.
 * One promise and no listener on the signal: this is on the path of every run(), where every object that
 * lives across the call is garbage the young generation must copy (docs/PERFORMANCE.md). A synchronous
 * throw from the callback is its rejection.
 */
export function callWithinLease(
  call: PartnerCall,
  intentId: string,
  key: string,
  attempt: number,
  lease: AttemptLease,
): Promise<CallSettled> {
  // An own getter, so a callback that copies its context (`{ ...context }`) still gets the signal.
  const context: CallContext = {
    intentId,
    key,
    attempt,
    get signal() {
      return lease.signal;
    },
  };
  return new Promise((resolve) => {
    let callPromise: Promise<CallResult>;
    try {
      callPromise = Promise.resolve(call(context));
    } catch (error) {
      callPromise = Promise.reject(error);
    }
    lease.whenEnding(() => resolve({ kind: 'lease-ending', callPromise }));
    callPromise.then(
      (value) => resolve({ kind: 'ok', value }),
      (error: unknown) => resolve({ kind: 'error', error }),
    );
  });
}
