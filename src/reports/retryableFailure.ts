import axios from 'axios';

// Which failed attempts at a partner request are worth another try

/** An attempt that failed in a way the next one may not: a retryable status, a timeout, a network error. */
export type RetryableFailure =
  | { kind: 'status'; status: number; retryAfterMs?: number }
  | { kind: 'timeout' }
  | { kind: 'network'; code: string };

/** Network failures worth another try: the next connection may well work. */
const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'ECONNABORTED',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/** A network error's code worth another try (see RETRYABLE_NETWORK_CODES). */
export function isRetryableNetworkCode(code: string): boolean {
  return RETRYABLE_NETWORK_CODES.has(code);
}

/** An error status worth another try: 429 (too many requests) or the partner's own failure (5xx). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * The code of a failed request's error, `ERR_UNKNOWN` when it has none. A body broken off midway fails in
 * the stream, as a plain Node error with its code rather than an axios error.
 */
export function errorCode(error: unknown): string {
  const ownCode = (error as { code?: unknown } | null)?.code;
  return axios.isAxiosError(error)
    ? (error.code ?? 'ERR_UNKNOWN')
    : typeof ownCode === 'string'
      ? ownCode
      : 'ERR_UNKNOWN';
}
