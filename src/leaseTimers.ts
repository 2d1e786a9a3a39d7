import { LeaseEndingError } from './leaseEndingError.js';

/** The longest delay setTimeout accepts (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * One abort timer per claimed attempt: it fires the signal handed to the partner call before the attempt's
 * lease ends (invariant 3), and is cleared as soon as the attempt is settled. Timers are unref'd, so calls
 * still in flight never hold the process open.
 */
export class LeaseTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  /** Arms the timer of (`intentId`, `attempt`) to fire at `fireAt` (epoch ms); returns the call's signal. */
  arm(intentId: string, attempt: number, fireAt: number): AbortSignal {
    const key = `${intentId}:${attempt}`;
    const controller = new AbortController();
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        controller.abort(new LeaseEndingError(intentId, attempt));
      },
      // Clamped to what setTimeout can count: beyond it Node fires after 1 ms, aborting every call at once.
      // Past ~24.8 days the call is aborted early, which is still before the lease ends.
      Math.min(MAX_TIMER_MS, Math.max(0, fireAt - Date.now())),
    );
    timer.unref();
    this.timers.set(key, timer);
    return controller.signal;
  }

  /** Clears the timer of (`intentId`, `attempt`), if it is still armed. */
  disarm(intentId: string, attempt: number): void {
    const key = `${intentId}:${attempt}`;
    const timer = this.timers.get(key);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(key);
  }
}

/** Resolves once `signal` has fired (at once if it already has). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
