import type { Pool, PoolClient } from 'pg';
import type { DiscrepancyStatus } from '../shared/status.js';
import { normaliseIds } from './discrepancyIds.js';
import type { ReviewAction } from './discrepancyTypes.js';
import { ActorRequiredError } from './errors/ActorRequiredError.js';
import { DiscrepancyTransitionError, type RefusedDiscrepancy } from './errors/DiscrepancyTransitionError.js';
import { NoteRequiredError } from './errors/NoteRequiredError.js';
import { ASSIGNABLE_STATUSES, canApply, isReviewAction, TRANSITIONS } from './transitions.js';

/** What a person types when they act on discrepancies. */
export interface ReviewInput {
  /** Why; required and not blank. */
  note: string;
  /** Who; required and not blank. */
  by: string;
  /** Optionally (re)assign the discrepancies to someone in the same change. */
  assignee?: string;
  /**
   * A stricter approval threshold than the ledger's (a review site's `approvalThreshold`), in every
   * currency's major units: resolving or dismissing above it is refused as above the ledger's is. Checked
   * with the ledger's, under the row lock, so an amount at risk that grows between a caller's own check
   * and the change cannot slip under it.
   */
  approvalThreshold?: string;
}

/** What a review transaction needs: a pool to check a client out of (for its own transaction). */
export type TransactionalDb = Pick<Pool, 'connect'>;

/**
 * Applies `action` to every id in ONE transaction, all or nothing. Rows are locked `FOR UPDATE` in id order,
 * so concurrent bulk requests never deadlock; states are checked under the lock. When any id does not exist
 * or is in a state the action does not start from, nothing changes and a {@link DiscrepancyTransitionError}
 * lists each offending id with its current state. Resolving or dismissing a discrepancy above its currency's
 * approval threshold (approvalThresholds.ts) is refused the same way (`DISCREPANCY_APPROVAL_REQUIRED`): it
 * is a proposal for a second resolver (fourEyes.ts `propose`), never one person's decision. Each change appends a `discrepancy_history` row (from,
 * to, actor, note, assignee) and bumps `updated_at`. Returns the changed ids in id order.
 */
export async function reviewDiscrepancies(
  db: TransactionalDb,
  ids: string[],
  action: ReviewAction,
  input: ReviewInput,
): Promise<{ changed: string[] }> {
  if (!isReviewAction(action)) throw new RangeError(`unknown review action ${JSON.stringify(action)}`);
  const { note, by, assignee } = checkInput(action, input);
  const to = TRANSITIONS[action].to;
  return lockAndChange(db, ids, action, (status) => canApply(action, status), {
    to: () => to,
    note,
    by,
    assignee,
    stricterThreshold: input.approvalThreshold,
  });
}

/**
 * Records an assignment without changing the status (the history row has `from_status = to_status`). Only
 * open and acknowledged discrepancies can be assigned; same all-or-nothing rules and errors as
 * {@link reviewDiscrepancies}.
 */
export async function assign(
  db: TransactionalDb,
  ids: string[],
  assignee: string,
  input: { note: string; by: string },
): Promise<{ changed: string[] }> {
  const checked = checkInput('assign', { ...input, assignee });
  if (!checked.assignee) throw new RangeError('assign needs a non-blank assignee');
  return lockAndChange(db, ids, 'assign', (status) => ASSIGNABLE_STATUSES.includes(status), {
    to: (status) => status,
    note: checked.note,
    by: checked.by,
    assignee: checked.assignee,
  });
}

function checkInput(action: string, input: ReviewInput): { note: string; by: string; assignee?: string } {
  const note = typeof input?.note === 'string' ? input.note.trim() : '';
  if (!note) throw new NoteRequiredError(action);
  const by = typeof input?.by === 'string' ? input.by.trim() : '';
  if (!by) throw new ActorRequiredError(action);
  const assignee =
    typeof input.assignee === 'string' && input.assignee.trim() ? input.assignee.trim() : undefined;
  return { note, by, assignee };
}

/** One review change: each row's new status, the history's note and actor, and what may refuse it. */
interface Change {
  to: (status: DiscrepancyStatus) => DiscrepancyStatus;
  note: string;
  by: string;
  assignee?: string;
  /** ReviewInput.approvalThreshold. */
  stricterThreshold?: string;
}

async function lockAndChange(
  db: TransactionalDb,
  ids: string[],
  action: ReviewAction | 'assign',
  allowed: (status: DiscrepancyStatus) => boolean,
  change: Change,
): Promise<{ changed: string[] }> {
  const { valid, invalid } = normaliseIds(ids);
  if (valid.length === 0 && invalid.length === 0) return { changed: [] };
  const client = await db.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      const changed = await changeLocked(client, valid, invalid, action, allowed, change);
      await client.query('COMMIT');
      return { changed };
    } catch (error) {
      // Keep the original error; a client that cannot even roll back is destroyed, not pooled.
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}

async function changeLocked(
  client: PoolClient,
  ids: string[],
  invalid: string[],
  action: ReviewAction | 'assign',
  allowed: (status: DiscrepancyStatus) => boolean,
  change: Change,
): Promise<string[]> {
  // ORDER BY id with FOR UPDATE: PostgreSQL locks rows in the order it returns them, so every request locks
  // in the same global order and two bulk requests on overlapping ids wait for each other instead of
  // deadlocking. Statuses read here are the committed ones after any wait.
  // The threshold is read here, under the lock, so the refusal names it; the four-eyes trigger (migration
  // 0016) would refuse the same rows anyway, with a message a person cannot act on as easily.
  const locked = await client.query<{
    id: string;
    status: DiscrepancyStatus;
    threshold: string | null;
    big: boolean;
  }>(
    `SELECT id, status, least(approval_threshold_for(currency), $2::numeric)::text AS threshold,
            coalesce(abs(amount_at_risk) > least(approval_threshold_for(currency), $2::numeric), false) AS big
       FROM discrepancies WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
    [ids, change.stricterThreshold ?? null],
  );
  const found = new Map(locked.rows.map((row) => [row.id, row]));
  const needsApproval = action === 'resolve' || action === 'dismiss';
  const refused: RefusedDiscrepancy[] = [
    ...invalid.map((id) => ({ id, status: null, reason: 'DISCREPANCY_NOT_FOUND' as const })),
  ];
  for (const id of ids) {
    const row = found.get(id);
    if (row === undefined) refused.push({ id, status: null, reason: 'DISCREPANCY_NOT_FOUND' });
    else if (!allowed(row.status))
      refused.push({ id, status: row.status, reason: 'DISCREPANCY_TRANSITION_NOT_ALLOWED' });
    else if (needsApproval && row.big)
      refused.push({
        id,
        status: row.status,
        reason: 'DISCREPANCY_APPROVAL_REQUIRED',
        threshold: row.threshold ?? undefined,
      });
  }
  if (refused.length > 0) throw new DiscrepancyTransitionError(action, refused);

  const toStatuses = locked.rows.map((row) => change.to(row.status));
  // A proposal still waiting on a discrepancy this change settles (proposed while it was above the
  // threshold, settled after the threshold was raised) is withdrawn with a history row: otherwise its page
  // would go on asking a second resolver for a decision that can no longer be taken.
  await client.query(
    `WITH changes AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) AS c(id, from_status, to_status)
     ), updated AS (
       UPDATE discrepancies d
          SET status = c.to_status, assignee = coalesce($6::text, d.assignee), updated_at = now()
         FROM changes c
        WHERE d.id = c.id
     ), withdrawn AS (
       DELETE FROM discrepancy_proposals p USING changes c
        WHERE p.discrepancy_id = c.id AND c.to_status IN ('resolved', 'dismissed')
       RETURNING p.discrepancy_id, p.action, p.proposed_by
     )
     INSERT INTO discrepancy_history (discrepancy_id, from_status, to_status, actor, note, assignee)
     SELECT id, from_status, to_status, actor, note, assignee
       FROM (SELECT c.id, 1 AS step, c.from_status, c.to_status, $4 AS actor, $5 AS note, $6 AS assignee
               FROM changes c
             UNION ALL
             SELECT c.id, 2, c.to_status, c.to_status, $4,
                    format('%s''s proposal to %s is withdrawn: the discrepancy is %s', w.proposed_by, w.action,
                           c.to_status),
                    NULL
               FROM withdrawn w JOIN changes c ON c.id = w.discrepancy_id) entries
      ORDER BY id, step`,
    [
      locked.rows.map((row) => row.id),
      locked.rows.map((row) => row.status),
      toStatuses,
      change.by,
      change.note,
      change.assignee ?? null,
    ],
  );
  return locked.rows.map((row) => row.id);
}
