import pino from 'pino';

/** The slice of a pino-compatible logger the ledger uses; pass your own pino (or a child of it). */
export interface Logger {
  debug(object: object, message: string): void;
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/**
 * Default logger: pino on stdout at `LOG_LEVEL` (default `info`). Authorization headers and tokens are
 * redacted by path in case a caller logs a request config through us.
 */
export function createDefaultLogger(name = 'intent-ledger'): Logger {
  return pino({
    name,
    level: process.env.LOG_LEVEL ?? 'info',
    redact: {
      paths: [
        'token',
        '*.token',
        'headers.authorization',
        '*.headers.authorization',
        'config.headers',
        'password',
      ],
      censor: '[redacted]',
    },
  });
}
