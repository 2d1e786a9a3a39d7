/**
 * Four eyes on big money: resolving or dismissing a discrepancy whose amount at risk is above a threshold
 * is first a proposal (table `discrepancy_proposals`, migration 0010), applied only when a second resolver,
 * not the one who proposed it, approves it. The history keeps the proposal and the approval (or rejection),
 * each with its person and note. The thresholds are the ledger's (approvalThresholds.ts, migration 0016), and a
 * trigger refuses the change to anyone who skips the proposal; the review site may ask for a lower one.
 */
import Decimal from 'decimal.js';
import type { PoolClient } from 'pg';
import type { Queryable } from '../database/queryable.js';
import type { DiscrepancyStatus } from '../shared/status.js';
import { ApprovalError } from './errors/ApprovalError.js';
import { NoteRequiredError } from './errors/NoteRequiredError.js';
import type { TransactionalDb } from './reviewDiscrepancies.js';
import { canApply, TRANSITIONS } from './transitions.js';

/** The actions that need a second resolver above the threshold. */
export type ApprovableAction = 'resolve' | 'dismiss';

export function needsApprovalFor(action: string): action is ApprovableAction {
  return action === 'resolve' || action === 'dismiss';
}

export interface Proposal {
  action: ApprovableAction;
  proposedBy: string;
  note: string;
  proposedAt: Date;
}

/**
 * Whether the discrepancy's amount at risk (in its own currency) is above the threshold in force for that
 * currency (see approvalThresholds.ts), or above `stricterThreshold` (a review site may ask for four eyes
 * below the ledger's threshold, never above it), compared as `numeric`.
 */
export async function aboveThreshold(
  db: Queryable,
  id: string,
  stricterThreshold?: string,
): Promise<boolean> {
  const result = await db.query<{ big: boolean }>(
    `SELECT coalesce(abs(amount_at_risk) > least(approval_threshold_for(currency), $2::numeric), false) AS big
       FROM discrepancies WHERE id = $1`,
    [id, stricterThreshold ?? null],
  );
  return result.rows[0]?.big ?? false;
}

/** The proposal waiting for a second resolver, if any. */
export async function pendingProposal(db: Queryable, id: string): Promise<Proposal | null> {
  const result = await db.query<{
    action: ApprovableAction;
    proposed_by: string;
    note: string;
    proposed_at: Date;
  }>('SELECT action, proposed_by, note, proposed_at FROM discrepancy_proposals WHERE discrepancy_id = $1', [
    id,
  ]);
  const row = result.rows[0];
  return row
    ? { action: row.action, proposedBy: row.proposed_by, note: row.note, proposedAt: row.proposed_at }
    : null;
}

/** The amount at risk and currency a person was shown when they decided (the page's, or an API caller's). */
export interface SeenMoney {
  amountAtRisk: string | null;
  currency: string | null;
}

/**
 * Records `by`'s proposal to resolve or dismiss, with a history row (status unchanged) saying so. Refused
 * (ApprovalError) when one is already waiting, or when the discrepancy's status does not allow the action.
 * With `seen` (what the proposer's page showed), refused as `PROPOSAL_STALE` when the discrepancy no longer
 * has that amount and currency: the reconciler may have grown it after the page was drawn.
 */
export async function propose(
  db: TransactionalDb,
  id: string,
  action: ApprovableAction,
  input: { note: string; by: string; seen?: SeenMoney },
): Promise<void> {
  const note = input.note.trim();
  if (!note) throw new NoteRequiredError(action);
  await inTransaction(db, async (client) => {
    const locked = await lockDiscrepancy(client, id);
    const { status } = locked;
    if (!canApply(action, status))
      throw new ApprovalError(
        'TRANSITION_NOT_ALLOWED',
        `discrepancy ${id} is ${status}: it cannot be ${action}d`,
      );
    if (input.seen && !sameMoney(input.seen, locked))
      throw new ApprovalError(
        'PROPOSAL_STALE',
        `discrepancy ${id} now has ${moneyText(locked.amount_at_risk, locked.currency)} at risk, not the ` +
          `${moneyText(input.seen.amountAtRisk, input.seen.currency)} you were shown: look at it again`,
      );
    // The amount and currency are copied from the locked row, which `seen` (when given) showed the proposer
    // (migration 0018).
    const inserted = await client.query(
      `INSERT INTO discrepancy_proposals (discrepancy_id, action, proposed_by, note, amount_at_risk, currency)
       SELECT id, $2, $3, $4, amount_at_risk, currency FROM discrepancies WHERE id = $1
       ON CONFLICT (discrepancy_id) DO NOTHING RETURNING discrepancy_id`,
      [id, action, input.by, note],
    );
    if (inserted.rows.length === 0)
      throw new ApprovalError('PROPOSAL_PENDING', `discrepancy ${id} already waits for a second resolver`);
    await history(
      client,
      id,
      status,
      status,
      input.by,
      `proposes to ${action} (needs a second resolver): ${note}`,
    );
  });
}

/**
 * `by` decides on the waiting proposal: `approve` applies it (status changes, history row by `by` naming the
 * proposer), `reject` drops it (history row, status unchanged). The proposer cannot decide on their own
 * proposal (ApprovalError `OWN_PROPOSAL`). A proposal is approved only for the amount at risk and currency
 * it was made on: when the discrepancy has another now, approving withdraws the proposal (history row,
 * status unchanged, committed) and throws ApprovalError `PROPOSAL_STALE`, so the changed discrepancy is
 * proposed and judged again by two people.
 */
export async function decideProposal(
  db: TransactionalDb,
  id: string,
  decision: 'approve' | 'reject',
  input: { note: string; by: string },
): Promise<ApprovableAction> {
  const note = input.note.trim();
  if (!note) throw new NoteRequiredError(decision);
  const decided = await inTransaction(db, async (client): Promise<Decided> => {
    const locked = await lockDiscrepancy(client, id);
    const { status } = locked;
    // `same_money`: the discrepancy (locked above) still has the amount, compared as numeric (1.0 = 1.00),
    // and the currency the proposal was made on.
    const found = await client.query<{
      action: ApprovableAction;
      proposed_by: string;
      amount_at_risk: string | null;
      currency: string | null;
      same_money: boolean;
    }>(
      `SELECT p.action, p.proposed_by, p.amount_at_risk::text, p.currency,
              p.amount_at_risk IS NOT DISTINCT FROM d.amount_at_risk
                AND p.currency IS NOT DISTINCT FROM d.currency AS same_money
         FROM discrepancy_proposals p JOIN discrepancies d ON d.id = p.discrepancy_id
        WHERE p.discrepancy_id = $1 FOR UPDATE OF p`,
      [id],
    );
    const proposal = found.rows[0];
    if (!proposal) throw new ApprovalError('NO_PROPOSAL', `discrepancy ${id} has no proposal waiting`);
    if (proposal.proposed_by === input.by)
      throw new ApprovalError(
        'OWN_PROPOSAL',
        `you proposed to ${proposal.action} discrepancy ${id}: a second resolver must ${decision} it`,
      );
    await client.query('DELETE FROM discrepancy_proposals WHERE discrepancy_id = $1', [id]);
    if (decision === 'approve' && !proposal.same_money) {
      const was = moneyText(proposal.amount_at_risk, proposal.currency);
      const now = moneyText(locked.amount_at_risk, locked.currency);
      await history(
        client,
        id,
        status,
        status,
        input.by,
        `cannot approve ${proposal.proposed_by}'s proposal to ${proposal.action}: it was made on ${was} at ` +
          `risk and the discrepancy now has ${now}; the proposal is withdrawn, propose again`,
      );
      return { stale: { proposedBy: proposal.proposed_by, action: proposal.action, was, now } };
    }
    if (decision === 'reject') {
      await history(
        client,
        id,
        status,
        status,
        input.by,
        `rejects ${proposal.proposed_by}'s proposal to ${proposal.action}: ${note}`,
      );
      return { action: proposal.action };
    }
    if (!canApply(proposal.action, status))
      throw new ApprovalError(
        'TRANSITION_NOT_ALLOWED',
        `discrepancy ${id} is ${status}: it cannot be ${proposal.action}d`,
      );
    const to = TRANSITIONS[proposal.action].to;
    // Tells the four-eyes trigger (migration 0016) that this change is a second resolver's approval; local
    // to this transaction, and to this one discrepancy.
    await client.query("SELECT set_config('intent_ledger.approved_discrepancy', $1, true)", [id]);
    await client.query('UPDATE discrepancies SET status = $2, updated_at = now() WHERE id = $1', [id, to]);
    await history(
      client,
      id,
      status,
      to,
      input.by,
      `approves ${proposal.proposed_by}'s proposal to ${proposal.action}: ${note}`,
    );
    return { action: proposal.action };
  });
  if ('stale' in decided) {
    const { stale } = decided;
    throw new ApprovalError(
      'PROPOSAL_STALE',
      `${stale.proposedBy}'s proposal to ${stale.action} discrepancy ${id} was made on ${stale.was} at risk, ` +
        `and it now has ${stale.now}: the proposal is withdrawn; look at the discrepancy again and propose anew`,
    );
  }
  return decided.action;
}

/** What deciding did: applied or dropped the proposal's action, or found it stale (and withdrew it). */
type Decided =
  | { action: ApprovableAction }
  | { stale: { proposedBy: string; action: ApprovableAction; was: string; now: string } };

interface LockedDiscrepancy {
  status: DiscrepancyStatus;
  amount_at_risk: string | null;
  currency: string | null;
}

async function lockDiscrepancy(client: PoolClient, id: string): Promise<LockedDiscrepancy> {
  const locked = await client.query<LockedDiscrepancy>(
    'SELECT status, amount_at_risk::text, currency FROM discrepancies WHERE id = $1 FOR UPDATE',
    [id],
  );
  const row = locked.rows[0];
  if (row === undefined) throw new ApprovalError('NOT_FOUND', `discrepancy ${id} does not exist`);
  return row;
}

/** Whether `seen` is the locked row's amount (compared as numeric: 150 is 150.00) and currency. */
function sameMoney(seen: SeenMoney, row: LockedDiscrepancy): boolean {
  if ((seen.currency ?? null) !== row.currency) return false;
  if (seen.amountAtRisk === null || row.amount_at_risk === null)
    return seen.amountAtRisk === row.amount_at_risk;
  return new Decimal(seen.amountAtRisk).equals(row.amount_at_risk);
}

function moneyText(amount: string | null, currency: string | null): string {
  return amount === null ? 'an unknown amount' : `${amount}${currency ? ` ${currency}` : ''}`;
}

function history(
  client: PoolClient,
  id: string,
  from: DiscrepancyStatus,
  to: DiscrepancyStatus,
  by: string,
  note: string,
) {
  return client.query(
    `INSERT INTO discrepancy_history (discrepancy_id, from_status, to_status, actor, note) VALUES ($1, $2, $3, $4, $5)`,
    [id, from, to, by, note],
  );
}

async function inTransaction<T>(db: TransactionalDb, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
