import { PartnerApiError } from '../reports/errors/PartnerApiError.js';
import { ReportFormatError } from '../reports/errors/ReportFormatError.js';
import { capText } from '../shared/capText.js';
import { withoutCredentials } from '../shared/withoutCredentials.js';
import { RunAbandonedError } from './errors/RunAbandonedError.js';
import { RunAbortedError } from './errors/RunAbortedError.js';
import { TooManyRejectedRowsError } from './errors/TooManyRejectedRowsError.js';

// How a failed run is told apart and described (runOnce): what it stores in `error` and how loudly it logs.

/** The run was stopped (its signal, or an API read aborted by it): stored as `aborted`. */
export function isAbort(error: unknown): boolean {
  return error instanceof RunAbortedError || (error instanceof PartnerApiError && error.code === 'aborted');
}

/**
 * A failure the run expects and reports as a warning: stopped, abandoned, too many rejected rows, or a
 * problem with the report itself (its format, the partner's API, a missing file). Anything else is logged
 * as an error with its stack.
 */
export function isExpectedFailure(error: unknown): boolean {
  return (
    error instanceof RunAbortedError ||
    error instanceof RunAbandonedError ||
    error instanceof TooManyRejectedRowsError ||
    error instanceof ReportFormatError ||
    error instanceof PartnerApiError ||
    (error as NodeJS.ErrnoException)?.code === 'ENOENT'
  );
}

/** The error as stored and logged: no URL credentials, and capped ({@link capText}). */
export function errorMessage(error: unknown): string {
  return capText(withoutCredentials(error instanceof Error ? error.message : String(error)));
}
