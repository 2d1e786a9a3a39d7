import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { writeDiscrepanciesJson } from '../../discrepancies/discrepanciesJson.js';
import { isDiscrepancySort } from '../../discrepancies/discrepancyQuery.js';
import type { DiscrepancyFilter } from '../../discrepancies/discrepancyTypes.js';
import { countDiscrepancies } from '../../discrepancies/listDiscrepancies.js';
import { renderHtmlSummary } from '../../discrepancies/renderHtmlSummary.js';
import { streamDiscrepancies } from '../../discrepancies/streamDiscrepancies.js';
import { summaryData } from '../../discrepancies/summaryData.js';
import { writeChunk } from '../../discrepancies/writeChunk.js';
import { isCsvSeparator, writeDiscrepanciesCsv } from '../../discrepancies/writeDiscrepanciesCsv.js';
import { writeDiscrepancyTable } from '../../discrepancies/writeDiscrepancyTable.js';
import { writeDiscrepanciesXlsx } from '../../discrepancies/xlsx/writeDiscrepanciesXlsx.js';
import { DISCREPANCY_KINDS, DISCREPANCY_STATUSES } from '../../shared/status.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { createProgress, type Progress } from '../progress.js';
import { enumList, parsePositiveInt, parseSince, parseStrict, splitList } from './discrepancyArgs.js';

export const discrepanciesUsage =
  'intent-ledger discrepancies [--status S]... [--partner P]... [--kind K]... [--since ISO|7d] [--search TEXT] ' +
  '[--sort FIELD] [--direction asc|desc] [--limit N] [--format table|csv|xlsx|json|html] ' +
  '[--separator comma|semicolon] [--output FILE]   list or export discrepancies';

const FORMATS = ['table', 'csv', 'xlsx', 'json', 'html'] as const;
type Format = (typeof FORMATS)[number];

/**
 * `intent-ledger discrepancies`: lists discrepancies (newest first) as an aligned table, or exports them as
 * XLSX (typed cells, for spreadsheets; a file, or a redirected stdout, never a terminal), CSV (for
 * programs; `--separator semicolon` for comma-decimal locales), JSON or a self-contained HTML report, to
 * stdout or `--output FILE`. Rows come from one server-side cursor in batches of 1000, so exporting
 * millions keeps memory flat (docs/PERFORMANCE.md, "The command line", says how long that takes);
 * writing to a file from a terminal shows a progress bar on stderr. A file is written under a temporary
 * name and renamed when complete. A reader that stops early (`| head`) is not an error.
 */
export async function discrepanciesCommand(args: string[]): Promise<number> {
  const { values } = parseStrict({
    args,
    options: {
      status: { type: 'string', multiple: true },
      partner: { type: 'string', multiple: true },
      kind: { type: 'string', multiple: true },
      since: { type: 'string' },
      search: { type: 'string' },
      sort: { type: 'string' },
      direction: { type: 'string' },
      limit: { type: 'string' },
      format: { type: 'string', default: 'table' },
      separator: { type: 'string' },
      output: { type: 'string', short: 'o' },
    },
    allowPositionals: false,
  });
  const format = values.format as Format;
  if (!FORMATS.includes(format)) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}`);
  if (values.separator !== undefined && !isCsvSeparator(values.separator))
    throw new UsageError('--separator must be comma or semicolon');
  if (values.separator !== undefined && format !== 'csv')
    throw new UsageError('--separator applies to --format csv only');
  const separator = isCsvSeparator(values.separator) ? values.separator : 'comma';
  if (values.sort !== undefined && !isDiscrepancySort(values.sort))
    throw new UsageError('--sort must be one of createdAt, amountAtRisk, partner, kind, status');
  if (values.direction !== undefined && values.direction !== 'asc' && values.direction !== 'desc')
    throw new UsageError('--direction must be asc or desc');
  if (values.output !== undefined && !values.output.trim())
    throw new UsageError('--output needs a file name');
  if (format === 'xlsx' && values.output === undefined && process.stdout.isTTY)
    throw new UsageError(
      '--format xlsx writes a binary workbook, not text for a terminal: give --output FILE.xlsx (or redirect stdout)',
    );
  const filter: DiscrepancyFilter = {
    status: enumList('status', values.status, DISCREPANCY_STATUSES),
    partner: splitList(values.partner),
    kind: enumList('kind', values.kind, DISCREPANCY_KINDS),
    since: values.since === undefined ? undefined : parseSince(values.since),
    search: values.search,
    sort: values.sort as DiscrepancyFilter['sort'],
    direction: values.direction as DiscrepancyFilter['direction'],
    limit: values.limit === undefined ? undefined : parsePositiveInt('limit', values.limit),
  };

  const database = await openCliDatabase();
  const file = values.output;
  let target: Target | null = null;
  let progress: Progress | null = null;
  // `... | head`: the reader went away; that is not a failure of the export.
  let readerGone = false;
  const onStdoutError = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') readerGone = true;
  };
  if (!file) process.stdout.on('error', onStdoutError);
  try {
    target = file ? await openTarget(file) : null;
    const out: Writable = target?.stream ?? process.stdout;
    const showProgress = Boolean(file) && process.stderr.isTTY === true && format !== 'html';
    const total = showProgress ? await countDiscrepancies(database.pool, filter) : undefined;
    progress = createProgress({
      enabled: showProgress,
      label: `exporting ${format}`,
      total: total === undefined || filter.limit === undefined ? total : Math.min(total, filter.limit),
    });
    const onRow = (written: number) => progress?.update(written);
    let written: number;
    if (format === 'html') {
      const data = await summaryData(database.pool, filter, { tableLimit: filter.limit ?? 1000 });
      await writeChunk(out, renderHtmlSummary(data));
      written = data.rows.length;
    } else {
      const rows = streamDiscrepancies(database.pool, filter);
      written =
        format === 'csv'
          ? await writeDiscrepanciesCsv(rows, out, { end: false, onRow, separator })
          : format === 'xlsx'
            ? await writeDiscrepanciesXlsx(rows, out, { end: false, onRow })
            : format === 'json'
              ? await writeDiscrepanciesJson(rows, out, { onRow })
              : await writeDiscrepancyTable(rows, out, { onRow });
    }
    progress.finish();
    if (target && file) {
      await target.commit();
      console.log(`wrote ${written} discrepancies (${format}) to ${file}`);
    }
    return 0;
  } catch (error) {
    progress?.finish();
    await target?.abandon();
    if (!file && (readerGone || (error as NodeJS.ErrnoException).code === 'EPIPE')) return 0;
    throw error;
  } finally {
    process.stdout.off('error', onStdoutError);
    await database.close();
  }
}

interface Target {
  stream: Writable;
  commit(): Promise<void>;
  abandon(): Promise<void>;
}

/** A file written under a temporary name, renamed into place only when complete. */
async function openTarget(file: string): Promise<Target> {
  const partial = `${file}.partial-${process.pid}`;
  const stream = createWriteStream(partial, { flags: 'wx' });
  await once(stream, 'open');
  return {
    stream,
    async commit() {
      stream.end();
      await finished(stream);
      await rename(partial, file);
    },
    async abandon() {
      stream.destroy();
      await unlink(partial).catch(() => undefined);
    },
  };
}
