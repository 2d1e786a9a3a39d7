import type { Queryable } from '../database/queryable.js';
import { getIntentById } from '../ledger/sql/getIntentWithAttempts.js';
import type { DiscrepancyStatus } from '../shared/status.js';
import type { Json } from '../shared/types.js';
import { withoutCredentials } from '../shared/withoutCredentials.js';
import { isDiscrepancyId } from './discrepancyIds.js';
import { type DiscrepancyRow, SUMMARY_COLUMNS, toSummary } from './discrepancyRow.js';
import type {
  DiscrepancyDetail,
  DiscrepancyHistoryEntry,
  PartnerRecordView,
  RunView,
} from './discrepancyTypes.js';
import { DiscrepancyNotFoundError } from './errors/DiscrepancyNotFoundError.js';

/**
 * One discrepancy with everything finance needs to decide: its intent with every attempt, the partner rows
 * behind it (`partner_record_ids`, in id order), the reconciliation run that raised it, and its history
 * oldest first. `null` when there is no such discrepancy (or `id` is not an id).
 */
export async function getDiscrepancy(db: Queryable, id: string): Promise<DiscrepancyDetail | null> {
  if (!isDiscrepancyId(id)) return null;
  const found = await db.query<
    DiscrepancyRow & { attempt: number | null; details: Json; partner_record_ids: string[] }
  >(
    `SELECT ${SUMMARY_COLUMNS}, d.attempt, d.details, d.partner_record_ids FROM discrepancies d WHERE d.id = $1`,
    [id],
  );
  const row = found.rows[0];
  if (!row) return null;
  const [intent, partnerRecords, reversals, run, history] = await Promise.all([
    row.intent_id ? getIntentById(db, row.intent_id) : Promise.resolve(null),
    getPartnerRecords(db, row.partner_record_ids),
    row.intent_id ? getReversalsOf(db, row.intent_id) : Promise.resolve([]),
    row.run_id ? getRun(db, row.run_id) : Promise.resolve(null),
    getHistory(db, row.id),
  ]);
  return {
    ...toSummary(row),
    attempt: row.attempt,
    details: row.details,
    intent,
    partnerRecords,
    reversals,
    run,
    history,
  };
}

/** The reversals stored for an intent (migration 0011), in id order. */
async function getReversalsOf(db: Queryable, intentId: string): Promise<PartnerRecordView[]> {
  const ids = await db.query<{ id: string }>(
    `SELECT id FROM partner_records WHERE intent_id = $1 AND kind = 'reversal' ORDER BY id`,
    [intentId],
  );
  return getPartnerRecords(
    db,
    ids.rows.map((r) => r.id),
  );
}

/** The history of one discrepancy, oldest first (by insertion order, which is also time order). */
export async function getHistory(db: Queryable, discrepancyId: string): Promise<DiscrepancyHistoryEntry[]> {
  const result = await db.query<{
    id: string;
    from_status: DiscrepancyStatus | null;
    to_status: DiscrepancyStatus;
    actor: string;
    note: string | null;
    assignee: string | null;
    at: Date;
  }>(
    `SELECT id, from_status, to_status, actor, note, assignee, at
       FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id`,
    [discrepancyId],
  );
  return result.rows.map((h) => ({
    id: h.id,
    fromStatus: h.from_status,
    toStatus: h.to_status,
    actor: h.actor,
    note: h.note,
    assignee: h.assignee,
    at: h.at,
  }));
}

/** Partner rows by id, in id order, each with its run's source (see migration 0004). */
async function getPartnerRecords(db: Queryable, ids: readonly string[]): Promise<PartnerRecordView[]> {
  if (ids.length === 0) return [];
  const result = await db.query<{
    id: string;
    source: string;
    line: number;
    reference: string | null;
    partner_reference: string | null;
    amount: string | null;
    currency: string | null;
    executed_at: Date | null;
    run_id: string;
    settlement_amount: string | null;
    settlement_currency: string | null;
  }>(
    `SELECT pr.id, run.source, pr.line, pr.reference, pr.partner_reference, pr.amount::text AS amount, pr.currency,
            pr.executed_at, pr.run_id, pr.settlement_amount::text AS settlement_amount, pr.settlement_currency
       FROM partner_records pr
       JOIN reconciliation_runs run ON run.id = pr.run_id
      WHERE pr.id = ANY($1::bigint[])
      ORDER BY pr.id`,
    [ids],
  );
  return result.rows.map((r) => ({
    id: r.id,
    source: withoutCredentials(r.source),
    line: r.line,
    reference: r.reference,
    partnerReference: r.partner_reference,
    amount: r.amount,
    currency: r.currency,
    executedAt: r.executed_at,
    runId: r.run_id,
    settlementAmount: r.settlement_amount,
    settlementCurrency: r.settlement_currency,
  }));
}

/** A reconciliation run, or null. */
async function getRun(db: Queryable, runId: string): Promise<RunView | null> {
  const result = await db.query<{
    id: string;
    partner: string;
    source: string;
    status: string;
    started_at: Date;
    finished_at: Date | null;
    error: string | null;
  }>(
    'SELECT id, partner, source, status, started_at, finished_at, error FROM reconciliation_runs WHERE id = $1',
    [runId],
  );
  const r = result.rows[0];
  if (!r) return null;
  return {
    id: r.id,
    partner: r.partner,
    source: withoutCredentials(r.source),
    status: r.status,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    error: r.error,
  };
}

/** {@link getDiscrepancy}, throwing {@link DiscrepancyNotFoundError} (`DISCREPANCY_NOT_FOUND`) when missing. */
export async function requireDiscrepancy(db: Queryable, id: string): Promise<DiscrepancyDetail> {
  const detail = await getDiscrepancy(db, id);
  if (!detail) throw new DiscrepancyNotFoundError([id]);
  return detail;
}
