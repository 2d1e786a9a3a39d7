import type { DiscrepancyDetail } from '../../discrepancies/discrepancyTypes.js';
import { getDiscrepancy } from '../../discrepancies/getDiscrepancy.js';
import { allowedActions } from '../../discrepancies/transitions.js';
import { terminalSafe } from '../../discrepancies/writeDiscrepancyTable.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { parseStrict } from './discrepancyArgs.js';

export const discrepancyUsage =
  'intent-ledger discrepancy <id> [--json]   one discrepancy: intent and attempts, partner rows, run, history';

/**
 * `intent-ledger discrepancy <id>`: everything about one discrepancy, for a person (text) or a script
 * (`--json`: the {@link DiscrepancyDetail} with ISO 8601 instants and decimal-string amounts). Exit 1 when
 * there is no such discrepancy.
 */
export async function discrepancyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseStrict({
    args,
    options: { json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError('discrepancy takes exactly one id');
  const id = positionals[0];
  const database = await openCliDatabase();
  try {
    const detail = await getDiscrepancy(database.pool, id);
    if (!detail) {
      console.error(`no discrepancy ${terminalSafe(id)}`);
      return 1;
    }
    process.stdout.write(values.json ? `${JSON.stringify(detail, null, 2)}\n` : formatDetail(detail));
    return 0;
  } finally {
    await database.close();
  }
}

const iso = (date: Date | null) => (date ? date.toISOString() : '-');
const text = (value: string | number | null | undefined) =>
  value === null || value === undefined || value === '' ? '-' : terminalSafe(String(value));

/** The text view: every value from a partner or a person is made terminal-safe. */
function formatDetail(d: DiscrepancyDetail): string {
  const lines: string[] = [];
  const field = (name: string, value: string) => lines.push(`  ${name.padEnd(16)}${value}`);
  lines.push(`Discrepancy ${d.id}: ${d.kind} [${d.status}]`);
  field('partner', text(d.partner));
  field('summary', text(d.summary));
  field('reference', text(d.reference));
  field('partner ref', text(d.partnerReference));
  field('amount at risk', d.amountAtRisk === null ? '-' : `${d.amountAtRisk} ${text(d.currency)}`);
  field('assignee', text(d.assignee));
  field('raised', iso(d.createdAt));
  field('updated', iso(d.updatedAt));
  const actions = allowedActions(d.status);
  field('next', actions.length ? actions.join(', ') : '- (closed)');
  if (d.details && JSON.stringify(d.details) !== '{}') field('details', text(JSON.stringify(d.details)));

  lines.push('', d.intent ? `Intent ${d.intent.id}` : 'Intent: none');
  if (d.intent) {
    const i = d.intent;
    field('partner/op', `${text(i.partner)} / ${text(i.operation)}`);
    field('key', text(i.key));
    field('status', `${i.status} (attempt ${i.attempt})`);
    field('reference', text(i.reference));
    field('amount', i.amount === null ? '-' : `${i.amount} ${text(i.currency)}`);
    field('partner ref', text(i.partnerReference));
    field('created', iso(i.createdAt));
    field('settled', iso(i.settledAt));
    for (const a of i.attempts) {
      lines.push(
        `  attempt ${a.attempt}: ${a.outcome ?? 'no outcome'}, started ${iso(a.startedAt)}, ended ${iso(a.endedAt)}` +
          `, owner ${text(a.owner)}, partner ref ${text(a.partnerReference)}` +
          (a.resolution
            ? `, resolved ${a.resolution} by ${text(a.resolvedBy)} at ${iso(a.resolvedAt)}`
            : '') +
          (a.error ? `, error ${text(JSON.stringify(a.error))}` : ''),
      );
    }
  }

  lines.push('', `Partner rows (${d.partnerRecords.length})`);
  for (const r of d.partnerRecords) {
    lines.push(
      `  #${r.id} ${text(r.source)} line ${r.line}: reference ${text(r.reference)}, partner ref ${text(r.partnerReference)}, ` +
        `amount ${r.amount === null ? '-' : `${r.amount} ${text(r.currency)}`}` +
        (r.settlementAmount === null
          ? ''
          : ` (settled ${r.settlementAmount} ${text(r.settlementCurrency)})`) +
        `, executed ${iso(r.executedAt)}, run ${r.runId}`,
    );
  }

  if (d.reversals.length > 0) {
    lines.push('', `Reversals of these executions (${d.reversals.length}; not executions)`);
    for (const r of d.reversals) {
      lines.push(
        `  #${r.id} ${text(r.source)} line ${r.line}: reference ${text(r.reference)}, partner ref ${text(r.partnerReference)}, ` +
          `amount ${r.amount === null ? '-' : `${r.amount} ${text(r.currency)}`}, at ${iso(r.executedAt)}, run ${r.runId}`,
      );
    }
  }

  lines.push('', d.run ? `Run ${d.run.id}` : 'Run: none');
  if (d.run) {
    field('partner', text(d.run.partner));
    field('source', text(d.run.source));
    field('status', text(d.run.status));
    field('started', iso(d.run.startedAt));
    field('finished', iso(d.run.finishedAt));
    if (d.run.error !== null) field('error', text(d.run.error));
  }

  lines.push('', 'History (oldest first)');
  for (const h of d.history) {
    lines.push(
      `  ${iso(h.at)}  ${h.fromStatus ?? '(raised)'} -> ${h.toStatus}  by ${text(h.actor)}` +
        (h.assignee ? `  assignee ${text(h.assignee)}` : '') +
        (h.note ? `  note: ${text(h.note)}` : ''),
    );
  }
  return `${lines.join('\n')}\n`;
}
