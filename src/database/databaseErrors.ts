/** How the ledger tells a lost connection from a failed statement, and what of an error it may log. */

/** Errors worth retrying a write for: the connection, not the statement, failed. */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (
    typeof code === 'string' &&
    (/^(08|57P0)/.test(code) || /^E(CONN|PIPE|TIMEDOUT|HOSTUNREACH)/.test(code))
  )
    return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/i.test(
    message,
  );
}

/** What is safe to log of an error: its class, code and message; never request configs or headers. */
export function errorSummary(error: unknown): { name?: string; code?: unknown; message: string } {
  if (error instanceof Error)
    return { name: error.name, code: (error as { code?: unknown }).code, message: error.message };
  return { message: String(error) };
}
