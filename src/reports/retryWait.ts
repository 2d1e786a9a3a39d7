// Waiting between attempts at a partner request: how long (what the partner asks for, else a backoff),
// and the wait itself, which the caller's signal cuts short

/** `Retry-After` as delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Neither Retry-After nor backoff may stall a reconciliation run longer than this per attempt. */
const MAX_DELAY_MS = 30_000;

/**
 * How long to wait after failed attempt `attempt` (the first is 1): what the partner's Retry-After asked
 * for, else a backoff doubling from `baseMs`, half of it fixed and half random; MAX_DELAY_MS at most.
 */
export function retryDelayMs(attempt: number, baseMs: number, retryAfterMs: number | undefined): number {
  const backoff = baseMs * 2 ** (attempt - 1);
  const jittered = backoff / 2 + (Math.random() * backoff) / 2;
  return Math.round(Math.min(MAX_DELAY_MS, retryAfterMs ?? jittered));
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
