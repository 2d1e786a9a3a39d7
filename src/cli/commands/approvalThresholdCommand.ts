import {
  ANY_CURRENCY,
  currentApprovalThresholds,
  setApprovalThreshold,
} from '../../discrepancies/approvalThresholds.js';
import { terminalSafe } from '../../discrepancies/writeDiscrepancyTable.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { scriptActor } from '../scriptActor.js';
import { parseStrict } from './discrepancyArgs.js';

export const approvalThresholdUsage =
  'intent-ledger approval-threshold [list] | set <amount> | clear  [--currency XXX] --note TEXT --by NAME   ' +
  'four eyes: above it, a discrepancy needs a second resolver';

/**
 * `intent-ledger approval-threshold`: the four-eyes thresholds every program obeys (approvalThresholds.ts).
 * `list` (the default) prints those in force; `set <amount>` and `clear` change one currency's (`--currency`,
 * default every currency without its own), with a note, recorded as the script's (`--by` and the OS user).
 * Exit 2 on usage errors.
 */
export async function approvalThresholdCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseStrict({
    args,
    options: { currency: { type: 'string' }, note: { type: 'string' }, by: { type: 'string' } },
    allowPositionals: true,
  });
  const [verb = 'list', amount, ...rest] = positionals;
  if (rest.length) throw new UsageError(`approval-threshold ${verb}: unexpected ${rest.join(' ')}`);
  if (verb === 'list') {
    if (amount !== undefined || values.currency || values.note || values.by)
      throw new UsageError('approval-threshold list takes no arguments');
  } else if (verb === 'set' || verb === 'clear') {
    if (verb === 'set' && !amount)
      throw new UsageError('approval-threshold set needs an amount, e.g. 10000.00');
    if (verb === 'clear' && amount !== undefined)
      throw new UsageError('approval-threshold clear takes no amount');
    if (verb === 'set' && !/^\d+(\.\d+)?$/.test(amount as string))
      throw new UsageError(`approval-threshold set: ${JSON.stringify(amount)} is not a non-negative decimal`);
    if (
      values.currency !== undefined &&
      values.currency !== ANY_CURRENCY &&
      !/^[A-Za-z]{3}$/.test(values.currency)
    )
      throw new UsageError('--currency must be a 3-letter ISO 4217 code (or * for every currency)');
    if (!values.note?.trim()) throw new UsageError(`approval-threshold ${verb} needs --note TEXT (why)`);
    if (!values.by?.trim()) throw new UsageError(`approval-threshold ${verb} needs --by NAME (who)`);
  } else throw new UsageError('approval-threshold takes list, set or clear');

  const database = await openCliDatabase();
  try {
    if (verb === 'list') {
      const thresholds = await currentApprovalThresholds(database.pool);
      if (thresholds.length === 0) console.log('no approval threshold: one resolver decides any amount');
      for (const t of thresholds)
        console.log(
          `${t.currency === ANY_CURRENCY ? '* (any other currency)' : t.currency}\t${t.threshold}\t` +
            `set by ${terminalSafe(t.setBy)} at ${t.setAt.toISOString()}: ${terminalSafe(t.note)}`,
        );
      return 0;
    }
    const currency = (values.currency ?? ANY_CURRENCY).toUpperCase();
    await setApprovalThreshold(database.pool, {
      currency,
      threshold: verb === 'set' ? (amount as string) : null,
      by: scriptActor(values.by as string),
      note: values.note as string,
    });
    const which = currency === ANY_CURRENCY ? 'every currency without its own' : currency;
    console.log(
      verb === 'set'
        ? `approval threshold for ${which}: ${amount} (above it, resolving or dismissing needs a second resolver)`
        : `approval threshold for ${which} removed`,
    );
    return 0;
  } finally {
    await database.close();
  }
}
