/**
 * Shared by the bad-input and security fault suites: where the committed corpus lives, the three report
 * dialects it is written in, the run row as recorded, the CLI as a child process, and catchers for
 * unhandled rejections and for every byte a logger writes.
 */
import { join, resolve } from 'node:path';
import type { Pool } from 'pg';
import acmePay from '../../reconcilers/acme-pay.js';
import adyen from '../../reconcilers/adyen.js';
import cielo from '../../reconcilers/cielo.js';
import globexSms from '../../reconcilers/globex-sms.js';
import paypal from '../../reconcilers/paypal.js';
import type { ReconcilerApiSource, ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import { type CliRun, runCli as runCliProcess } from '../support/cliProcess.js';

/** The repository root: tests run compiled from `<outDir>/test/faults`, the fixtures stay in the source tree. */
export const REPO_ROOT = resolve(__dirname, '../../..');
/** The committed corpus of broken partner reports and API answers. */
export const BAD_REPORTS = join(REPO_ROOT, 'test/fixtures/bad-reports');

/**
 * How a corpus file is read:
 * - `acme-pay`: the real reconcilers/acme-pay.ts source (Latin-1, `;`, decimal comma with dot thousands,
 *   `dd/MM/yyyy HH:mm:ss` in America/Sao_Paulo, maxRejectedRatio 0.01);
 * - `utf8`: UTF-8, `,`, `.` decimals, ISO 8601 local times, same zone, lags and threshold as acme-pay;
 * - `adyen`: the real reconcilers/adyen.ts source (Settlement details report, Gross Debit / Credit, kinds
 *   from `Type`, Amsterdam time, maxRejectedRatio 0);
 * - `cielo`: the real reconcilers/cielo.ts source (fixed width, 250 positions, no coverage declared,
 *   trailer count, São Paulo time, maxRejectedRatio 0.01);
 * - `paypal`: the real reconcilers/paypal.ts source (Settlement Report STL: record types, minor units with
 *   CR/DR, kinds from T-codes, coverage from SH, SC/FF counts, maxRejectedRatio 0);
 * - `api`: the real reconcilers/globex-sms.ts source (cursor listing, Bearer token from
 *   GLOBEX_API_TOKEN, maxRejectedRatio 0), pointed at the loopback fake partner, which answers the file.
 */
export type Dialect = 'acme-pay' | 'utf8' | 'api' | 'adyen' | 'paypal' | 'cielo';

const UTF8_SOURCE: CsvSourceConfig = {
  type: 'csv',
  path: 'reports/utf8/*.csv',
  columns: {
    reference: 'reference',
    partnerReference: 'nsu',
    amount: 'amount',
    currency: 'currency',
    executedAt: 'executed_at',
  },
};

export function acmeReconciler(partner: string): ReconcilerConfig {
  return { ...acmePay, partner };
}

export function adyenReconciler(partner: string): ReconcilerConfig {
  return { ...adyen, partner };
}

export function cieloReconciler(partner: string): ReconcilerConfig {
  return { ...cielo, partner };
}

export function paypalReconciler(partner: string): ReconcilerConfig {
  return { ...paypal, partner };
}

export function utf8Reconciler(partner: string): ReconcilerConfig {
  return { ...acmePay, partner, source: UTF8_SOURCE };
}

/** globex-sms against `baseUrl`, with short timeouts and one quick retry so failure paths stay fast. */
export function apiReconciler(
  partner: string,
  baseUrl: string,
  source: Partial<ReconcilerApiSource> = {},
): ReconcilerConfig {
  const real = globexSms.source as ReconcilerApiSource;
  return {
    ...globexSms,
    partner,
    source: { ...real, baseUrl, timeoutMs: 2_000, retries: 1, retryBaseMs: 5, ...source },
  };
}

/** A `reconciliation_runs` row as the run recorded it. */
export interface RunRow {
  status: string;
  error: string | null;
  rows_read: number;
  rows_rejected: number;
  rejected: { line: number; field: string; reason: string }[];
  finished_at: Date | null;
}

export async function runRow(sql: Pool, runId: string | null): Promise<RunRow> {
  if (runId === null) throw new Error('the run has no id');
  const result = await sql.query<RunRow>(
    `SELECT status, error, rows_read, rows_rejected, rejected, finished_at
       FROM reconciliation_runs WHERE id = $1`,
    [runId],
  );
  if (result.rows.length !== 1) throw new Error(`no reconciliation run ${runId}`);
  return result.rows[0];
}

/** What the run row keeps of a text: PostgreSQL text and jsonb cannot hold NUL (see runOnce). */
export function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}

/** Every unhandled promise rejection while it listens (mocha would only see some of them, late). */
export function trackUnhandledRejections(): { readonly seen: unknown[]; stop(): void } {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  return {
    seen,
    stop: () => {
      process.off('unhandledRejection', listener);
    },
  };
}

/** A pino destination that keeps every byte written to it. */
export interface CapturedStream {
  write(chunk: string): void;
  text(): string;
}

export function captureStream(): CapturedStream {
  const chunks: string[] = [];
  return {
    write: (chunk: string) => {
      chunks.push(chunk);
    },
    text: () => chunks.join(''),
  };
}

/** `node <outDir>/src/cli/main.js ...args` from the repository root, with `env` added to this process's. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<CliRun> {
  return runCliProcess(args, env, { cwd: REPO_ROOT, timeoutMs });
}

/** `text` with every regex metacharacter escaped. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
