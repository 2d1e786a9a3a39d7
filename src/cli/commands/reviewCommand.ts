import type { ReviewAction } from '../../discrepancies/discrepancyTypes.js';
import { ActorRequiredError } from '../../discrepancies/errors/ActorRequiredError.js';
import { DiscrepancyTransitionError } from '../../discrepancies/errors/DiscrepancyTransitionError.js';
import { NoteRequiredError } from '../../discrepancies/errors/NoteRequiredError.js';
import { reviewDiscrepancies } from '../../discrepancies/reviewDiscrepancies.js';
import { TRANSITIONS } from '../../discrepancies/transitions.js';
import { terminalSafe } from '../../discrepancies/writeDiscrepancyTable.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { scriptActor } from '../scriptActor.js';
import { parseStrict, splitList } from './discrepancyArgs.js';

const PAST: Record<ReviewAction, string> = {
  acknowledge: 'acknowledged',
  resolve: 'resolved',
  dismiss: 'dismissed',
};

/**
 * Shared by `ack`, `resolve` and `dismiss`: `<id...> --note TEXT --by NAME [--assignee NAME]`. All ids
 * change in one transaction or none does. Exit 0 with what changed; 1 when the change is refused (each
 * offending id and why); 2 when the command line is wrong (no id, missing or blank --note / --by).
 */
export async function reviewCommand(action: ReviewAction, args: string[]): Promise<number> {
  const { values, positionals } = parseStrict({
    args,
    options: {
      note: { type: 'string' },
      by: { type: 'string' },
      assignee: { type: 'string' },
    },
    allowPositionals: true,
  });
  const ids = splitList(positionals);
  if (ids.length === 0) throw new UsageError(`${action} needs at least one discrepancy id`);
  if (!values.note?.trim()) throw new UsageError(`${action} needs --note TEXT (what was decided and why)`);
  if (!values.by?.trim()) throw new UsageError(`${action} needs --by NAME (who decided)`);

  const database = await openCliDatabase();
  try {
    const { changed } = await reviewDiscrepancies(database.pool, ids, action, {
      note: values.note,
      by: scriptActor(values.by),
      assignee: values.assignee,
    });
    const assigned = values.assignee?.trim() ? `, assigned to ${terminalSafe(values.assignee.trim())}` : '';
    console.log(
      `${PAST[action]} ${changed.length} ${changed.length === 1 ? 'discrepancy' : 'discrepancies'}: ` +
        `${changed.join(', ')} (by ${terminalSafe(values.by.trim())}${assigned})`,
    );
    return 0;
  } catch (error) {
    if (error instanceof DiscrepancyTransitionError) {
      const from = TRANSITIONS[action].from.join(' or ');
      console.error(`cannot ${action}: nothing was changed`);
      for (const refused of error.refused) {
        console.error(
          refused.status === null
            ? `  ${terminalSafe(refused.id)}: no such discrepancy`
            : refused.reason === 'DISCREPANCY_APPROVAL_REQUIRED'
              ? `  ${refused.id}: its amount at risk is above the approval threshold (${refused.threshold}): ` +
                'two resolvers decide it on the review site (intent-ledger serve), one proposing, one approving'
              : `  ${refused.id}: is ${refused.status} (${action} needs ${from})`,
        );
      }
      return 1;
    }
    if (error instanceof NoteRequiredError || error instanceof ActorRequiredError)
      throw new UsageError(error.message);
    throw error;
  } finally {
    await database.close();
  }
}
