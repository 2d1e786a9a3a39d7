/**
 * Why reading a partner's API failed, as a stable code callers can branch on:
 * - `config`: the source configuration cannot work (fix the configuration);
 * - `auth_missing`: the token's environment variable is not set;
 * - `http_status`: the partner answered an HTTP error (see `status`);
 * - `network`: the connection failed (refused, reset, DNS) on every attempt;
 * - `timeout`: no complete answer within `timeoutMs` on every attempt;
 * - `bad_body`: the answer is not the JSON shape the configuration describes;
 * - `cursor_repeated`: the partner handed back a cursor it had already given (it loops);
 * - `record_repeated`: the listing gave a record it had already given (its pages overlap or repeat);
 * - `body_too_large`: one answer grew past `maxBodyBytes` (the read was stopped there);
 * - `too_many_pages`: the listing went on past `maxPages` pages;
 * - `deadline`: the whole listing took longer than `listingTimeoutMs`;
 * - `aborted`: the caller's signal stopped the read.
 */
export const PartnerApiErrorCode = {
  config: 'config',
  authMissing: 'auth_missing',
  httpStatus: 'http_status',
  network: 'network',
  timeout: 'timeout',
  badBody: 'bad_body',
  cursorRepeated: 'cursor_repeated',
  recordRepeated: 'record_repeated',
  bodyTooLarge: 'body_too_large',
  tooManyPages: 'too_many_pages',
  deadline: 'deadline',
  aborted: 'aborted',
} as const;
export type PartnerApiErrorCode = (typeof PartnerApiErrorCode)[keyof typeof PartnerApiErrorCode];

export interface PartnerApiErrorDetails {
  code: PartnerApiErrorCode;
  partner?: string;
  /** The address asked, always without its query string. */
  url: string;
  status?: number;
  /** Requests made before giving up (0 when none could be made). */
  attempts: number;
  /** Only ever a plain error carrying a message and a code, never an HTTP client's error (those hold headers). */
  cause?: Error;
}

/**
 * A partner API could not be read. The message says what happened and how to fix it. It never holds the
 * token: that only travels in a request header, and no HTTP client error (whose `config.headers` would
 * hold it) is ever attached.
 */
export class PartnerApiError extends Error {
  override readonly name = 'PartnerApiError';
  readonly code: PartnerApiErrorCode;
  readonly partner?: string;
  readonly url: string;
  readonly status?: number;
  readonly attempts: number;

  constructor(message: string, details: PartnerApiErrorDetails) {
    super(message, details.cause ? { cause: details.cause } : undefined);
    this.code = details.code;
    this.partner = details.partner;
    this.url = withoutQuery(details.url);
    this.status = details.status;
    this.attempts = details.attempts;
  }
}

/**
 * Origin and path only: the query string and any `user:password@` part are dropped, because errors end up
 * in logs and tickets and a misconfigured partner might put secrets there.
 */
export function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    const cut = url.search(/[?#]/);
    return cut === -1 ? url : url.slice(0, cut);
  }
}
