import type { PoolClient } from 'pg';
import { resolveApiSourceConfig } from '../reports/apiSourceConfig.js';
import { listedWindow } from '../reports/listedWindow.js';
import type { ReportItem } from '../reports/partnerRow.js';
import { readApiReport } from '../reports/readApiReport.js';
import { readCsvReportBatches } from '../reports/readCsvReport.js';
import { readFixedWidthReportBatches } from '../reports/readFixedWidthReport.js';
import { expectedAccounts } from '../reports/reportAccount.js';
import type { Logger } from '../shared/logger.js';
import { apiWindow, type Coverage } from './coverage.js';
import { lookupStuckIntents } from './lookupStuckIntents.js';
import type { RunTarget } from './runOnce.js';
import type { RunSettings } from './runSettings.js';
import { oneByOne } from './stageReport.js';

/** A report ready to be read: its items in batches, and what its delivery already says. */
export interface OpenedReport {
  items: AsyncIterable<readonly ReportItem[]>;
  /** Lookup mode: each stuck intent is asked about on its own (no run-wide coverage, no orphans). */
  lookup: boolean;
  /** An API listing: the window it is asked for, which it declares it is complete for. */
  window?: Coverage;
}

/**
 * Stage 2 of a run (docs/DESIGN.md, "Reconciliation, stage by stage"): the CSV file, the partner's listing
 * for its window, or the lookups of this partner's stuck intents, as one stream of item batches. Nothing is
 * read until the stream is iterated.
 */
export async function openReportSource(
  client: PoolClient,
  input: {
    settings: RunSettings;
    target: RunTarget;
    env?: NodeJS.ProcessEnv;
    logger: Logger;
    signal?: AbortSignal;
  },
): Promise<OpenedReport> {
  const { settings, target, env, logger, signal } = input;
  const source = settings.source;
  if (target.type === 'file' && source.type === 'csv') {
    const account = source.config.account;
    const accounts = account ? (expectedAccounts(account, env ?? process.env) ?? undefined) : undefined;
    return {
      items: readCsvReportBatches(target.file, source.config, { timezone: settings.timezone, accounts }),
      lookup: false,
    };
  }
  if (target.type === 'file' && source.type === 'fixedWidth') {
    return {
      items: readFixedWidthReportBatches(target.file, source.config, { timezone: settings.timezone }),
      lookup: false,
    };
  }
  if (target.type === 'api' && source.type === 'api' && source.mode === 'lookup') {
    const items = lookupStuckIntents(client, {
      partner: settings.partner,
      source: source.config,
      stuckAfterMs: settings.stuckAfterMs,
      timezone: settings.timezone,
      env,
      logger,
      signal,
    });
    return { items: oneByOne(items), lookup: true };
  }
  if (source.type === 'api') {
    // Declared as asked: in whole seconds, if that is how the partner is asked (listedWindow).
    const window = listedWindow(
      await apiWindow(client, settings),
      resolveApiSourceConfig(source.config).window.format,
    );
    const items = readApiReport(source.config, {
      partner: settings.partner,
      timezone: settings.timezone,
      env,
      logger,
      signal,
      window,
    });
    return { items: oneByOne(items), lookup: false, window };
  }
  throw new TypeError(`reconciler ${settings.partner}: a file was given for a ${source.type} source`);
}
