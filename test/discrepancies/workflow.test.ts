import { expect } from 'chai';
import type { Pool } from 'pg';
import type { ReviewAction } from '../../src/discrepancies/discrepancyTypes.js';
import { ActorRequiredError } from '../../src/discrepancies/errors/ActorRequiredError.js';
import { DiscrepancyTransitionError } from '../../src/discrepancies/errors/DiscrepancyTransitionError.js';
import { NoteRequiredError } from '../../src/discrepancies/errors/NoteRequiredError.js';
import { getDiscrepancy, getHistory } from '../../src/discrepancies/getDiscrepancy.js';
import { assign, reviewDiscrepancies } from '../../src/discrepancies/reviewDiscrepancies.js';
import { allowedActions } from '../../src/discrepancies/transitions.js';
import type { DiscrepancyStatus } from '../../src/shared/status.js';
import { rejectionOf, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise } from './seed.js';

const by = 'alice';

describe('discrepancy review workflow', () => {
  const db = useFreshDatabase('disc_workflow');
  let sql: Pool;
  before(() => {
    sql = sqlPool(db.url, 8);
  });
  after(async () => {
    await sql.end();
  });

  /** A discrepancy brought to `status` through the workflow itself. */
  async function inStatus(status: DiscrepancyStatus): Promise<string> {
    const id = await raise(sql);
    if (status === 'acknowledged') await reviewDiscrepancies(sql, [id], 'acknowledge', { note: 'seen', by });
    if (status === 'resolved') await reviewDiscrepancies(sql, [id], 'resolve', { note: 'fixed', by });
    if (status === 'dismissed') await reviewDiscrepancies(sql, [id], 'dismiss', { note: 'noise', by });
    return id;
  }

  async function statusOf(id: string): Promise<string> {
    return (await sql.query('SELECT status FROM discrepancies WHERE id = $1', [id])).rows[0].status;
  }

  async function historyCount(): Promise<number> {
    return Number((await sql.query('SELECT count(*) AS n FROM discrepancy_history')).rows[0].n);
  }

  const expected: Record<ReviewAction, Record<DiscrepancyStatus, DiscrepancyStatus | null>> = {
    acknowledge: { open: 'acknowledged', acknowledged: null, resolved: null, dismissed: null },
    resolve: { open: 'resolved', acknowledged: 'resolved', resolved: null, dismissed: null },
    dismiss: { open: 'dismissed', acknowledged: 'dismissed', resolved: null, dismissed: null },
  };

  for (const [action, byStatus] of Object.entries(expected) as [ReviewAction, typeof expected.resolve][]) {
    for (const [from, to] of Object.entries(byStatus) as [DiscrepancyStatus, DiscrepancyStatus | null][]) {
      if (to) {
        it(`${action}: ${from} -> ${to}, with a history row and updated_at bumped`, async () => {
          const id = await inStatus(from);
          // As text: PostgreSQL keeps microseconds, a JavaScript Date only milliseconds, and raising
          // and reviewing can fall in the same millisecond.
          const before = (await sql.query('SELECT updated_at::text FROM discrepancies WHERE id = $1', [id]))
            .rows[0];
          const result = await reviewDiscrepancies(sql, [id], action, {
            note: `  ${action} it  `,
            by: ' bob ',
          });
          expect(result).to.deep.equal({ changed: [id] });
          const after = (
            await sql.query(
              'SELECT status, updated_at > $2::timestamptz AS bumped FROM discrepancies WHERE id = $1',
              [id, before.updated_at],
            )
          ).rows[0];
          expect(after.status).to.equal(to);
          expect(after.bumped).to.equal(true);
          const last = (await getHistory(sql, id)).at(-1)!;
          expect(last).to.include({
            fromStatus: from,
            toStatus: to,
            actor: 'bob',
            note: `${action} it`,
            assignee: null,
          });
        });
      } else {
        it(`${action}: refused from ${from}, nothing changes`, async () => {
          const id = await inStatus(from);
          const historyBefore = await historyCount();
          const error = await rejectionOf(reviewDiscrepancies(sql, [id], action, { note: 'try', by }));
          expect(error).to.be.instanceOf(DiscrepancyTransitionError);
          const refusal = error as DiscrepancyTransitionError;
          expect(refusal.code).to.equal('DISCREPANCY_TRANSITION_NOT_ALLOWED');
          expect(refusal.action).to.equal(action);
          expect(refusal.refused).to.deep.equal([
            { id, status: from, reason: 'DISCREPANCY_TRANSITION_NOT_ALLOWED' },
          ]);
          expect(refusal.message).to.contain(`${id} is ${from}`);
          expect(await statusOf(id)).to.equal(from);
          expect(await historyCount()).to.equal(historyBefore);
        });
      }
    }
  }

  it('allowedActions mirrors the transitions', () => {
    expect(allowedActions('open')).to.deep.equal(['acknowledge', 'resolve', 'dismiss']);
    expect(allowedActions('acknowledged')).to.deep.equal(['resolve', 'dismiss']);
    expect(allowedActions('resolved')).to.deep.equal([]);
    expect(allowedActions('dismissed')).to.deep.equal([]);
  });

  for (const action of ['acknowledge', 'resolve', 'dismiss'] as const) {
    for (const note of ['', '   ', '\n\t']) {
      it(`${action} with note ${JSON.stringify(note)}: NoteRequiredError, nothing changes`, async () => {
        const id = await raise(sql);
        const historyBefore = await historyCount();
        const error = await rejectionOf(reviewDiscrepancies(sql, [id], action, { note, by }));
        expect(error).to.be.instanceOf(NoteRequiredError);
        expect((error as NoteRequiredError).code).to.equal('NOTE_REQUIRED');
        expect(await statusOf(id)).to.equal('open');
        expect(await historyCount()).to.equal(historyBefore);
      });
    }
  }

  it('a blank "by" is refused with ActorRequiredError', async () => {
    const id = await raise(sql);
    const error = await rejectionOf(reviewDiscrepancies(sql, [id], 'resolve', { note: 'fixed', by: '  ' }));
    expect(error).to.be.instanceOf(ActorRequiredError);
    expect((error as ActorRequiredError).code).to.equal('ACTOR_REQUIRED');
    expect(await statusOf(id)).to.equal('open');
  });

  it('bulk: one refused or unknown id and NOTHING changes; the error lists every offender with its state', async () => {
    const a = await inStatus('open');
    const b = await inStatus('acknowledged');
    const c = await inStatus('resolved');
    const d = await inStatus('dismissed');
    const historyBefore = await historyCount();
    const error = await rejectionOf(
      reviewDiscrepancies(sql, [d, '999999999', a, c, b, 'abc'], 'resolve', { note: 'month end', by }),
    );
    expect(error).to.be.instanceOf(DiscrepancyTransitionError);
    expect((error as DiscrepancyTransitionError).refused).to.deep.equal([
      { id: 'abc', status: null, reason: 'DISCREPANCY_NOT_FOUND' },
      { id: c, status: 'resolved', reason: 'DISCREPANCY_TRANSITION_NOT_ALLOWED' },
      { id: d, status: 'dismissed', reason: 'DISCREPANCY_TRANSITION_NOT_ALLOWED' },
      { id: '999999999', status: null, reason: 'DISCREPANCY_NOT_FOUND' },
    ]);
    expect([await statusOf(a), await statusOf(b), await statusOf(c), await statusOf(d)]).to.deep.equal([
      'open',
      'acknowledged',
      'resolved',
      'dismissed',
    ]);
    expect(await historyCount()).to.equal(historyBefore);
  });

  it('bulk: all ids change in one transaction (same instant), in id order, duplicates once', async () => {
    const ids = [await raise(sql), await raise(sql), await raise(sql)];
    await reviewDiscrepancies(sql, [ids[1]], 'acknowledge', { note: 'looking', by });
    const result = await reviewDiscrepancies(sql, [ids[2], ids[0], ids[1], ids[2], `0${ids[0]}`], 'resolve', {
      note: 'refunded all three',
      by: 'carol',
    });
    expect(result.changed).to.deep.equal(ids);
    const rows = await sql.query(
      `SELECT discrepancy_id, from_status, to_status, at FROM discrepancy_history
        WHERE discrepancy_id = ANY($1::bigint[]) AND to_status = 'resolved' ORDER BY id`,
      [ids],
    );
    expect(rows.rows.map((r) => [r.discrepancy_id, r.from_status])).to.deep.equal([
      [ids[0], 'open'],
      [ids[1], 'acknowledged'],
      [ids[2], 'open'],
    ]);
    expect(new Set(rows.rows.map((r) => r.at.getTime())).size).to.equal(1);
  });

  it('concurrent bulk requests over the same ids in opposite orders never deadlock: one wins, one is refused', async () => {
    for (let round = 0; round < 5; round++) {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push(await raise(sql));
      const results = await Promise.allSettled([
        reviewDiscrepancies(sql, ids, 'acknowledge', { note: 'first', by: 'p1' }),
        reviewDiscrepancies(sql, [...ids].reverse(), 'acknowledge', { note: 'second', by: 'p2' }),
        reviewDiscrepancies(
          sql,
          [...ids].sort(() => Math.random() - 0.5),
          'acknowledge',
          { note: 'third', by: 'p3' },
        ),
      ]);
      const fulfilled = results.filter((r) => r.status === 'fulfilled');
      const rejected = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      expect(fulfilled).to.have.length(1);
      expect(rejected).to.have.length(2);
      for (const r of rejected) {
        expect(r.reason).to.be.instanceOf(DiscrepancyTransitionError);
        expect((r.reason as DiscrepancyTransitionError).refused.map((x) => x.status)).to.deep.equal(
          ids.map(() => 'acknowledged'),
        );
      }
      const history = await sql.query(
        `SELECT count(*) AS n FROM discrepancy_history WHERE discrepancy_id = ANY($1::bigint[]) AND to_status = 'acknowledged'`,
        [ids],
      );
      expect(Number(history.rows[0].n)).to.equal(20);
    }
  });

  it('history is append-only: UPDATE and DELETE on discrepancy_history fail', async () => {
    const id = await raise(sql);
    const update = await rejectionOf(
      sql.query("UPDATE discrepancy_history SET note = 'rewritten' WHERE discrepancy_id = $1", [id]),
    );
    expect((update as Error).message).to.contain('append-only');
    const remove = await rejectionOf(
      sql.query('DELETE FROM discrepancy_history WHERE discrepancy_id = $1', [id]),
    );
    expect((remove as Error).message).to.contain('append-only');
    expect((await getHistory(sql, id))[0].note).to.equal((await getDiscrepancy(sql, id))!.summary);
  });

  it('history: oldest first, with who, note and assignee of every change; the assignee sticks', async () => {
    const id = await raise(sql, { summary: 'Partner charged 12.00, we asked 10.00' });
    await reviewDiscrepancies(sql, [id], 'acknowledge', {
      note: 'calling acme',
      by: 'alice',
      assignee: 'bob',
    });
    await assign(sql, [id], 'dave', { note: 'bob is on leave', by: 'alice' });
    await reviewDiscrepancies(sql, [id], 'resolve', { note: 'acme refunded 2.00', by: 'dave' });
    const detail = (await getDiscrepancy(sql, id))!;
    expect(detail.status).to.equal('resolved');
    expect(detail.assignee).to.equal('dave');
    expect(
      detail.history.map(({ fromStatus, toStatus, actor, note, assignee }) => ({
        fromStatus,
        toStatus,
        actor,
        note,
        assignee,
      })),
    ).to.deep.equal([
      {
        fromStatus: null,
        toStatus: 'open',
        actor: 'reconciler',
        note: 'Partner charged 12.00, we asked 10.00',
        assignee: null,
      },
      { fromStatus: 'open', toStatus: 'acknowledged', actor: 'alice', note: 'calling acme', assignee: 'bob' },
      {
        fromStatus: 'acknowledged',
        toStatus: 'acknowledged',
        actor: 'alice',
        note: 'bob is on leave',
        assignee: 'dave',
      },
      {
        fromStatus: 'acknowledged',
        toStatus: 'resolved',
        actor: 'dave',
        note: 'acme refunded 2.00',
        assignee: null,
      },
    ]);
    const ids = detail.history.map((h) => BigInt(h.id));
    expect(ids).to.deep.equal([...ids].sort((a, b) => (a < b ? -1 : 1)));
    const times = detail.history.map((h) => h.at.getTime());
    expect(times).to.deep.equal([...times].sort((a, b) => a - b));
  });

  it('assign: keeps the status, refuses closed discrepancies and requires a note', async () => {
    const open = await raise(sql);
    expect(await assign(sql, [open], 'erin', { note: 'yours', by })).to.deep.equal({ changed: [open] });
    expect(await statusOf(open)).to.equal('open');
    const closed = await inStatus('resolved');
    const error = await rejectionOf(assign(sql, [open, closed], 'erin', { note: 'yours', by }));
    expect((error as DiscrepancyTransitionError).refused).to.deep.equal([
      { id: closed, status: 'resolved', reason: 'DISCREPANCY_TRANSITION_NOT_ALLOWED' },
    ]);
    expect(await rejectionOf(assign(sql, [open], 'erin', { note: ' ', by }))).to.be.instanceOf(
      NoteRequiredError,
    );
  });

  it('an empty id list changes nothing', async () => {
    expect(await reviewDiscrepancies(sql, [], 'resolve', { note: 'n', by })).to.deep.equal({ changed: [] });
  });
});
