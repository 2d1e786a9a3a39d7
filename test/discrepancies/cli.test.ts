import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Pool } from 'pg';
import { type CliRun, runCli } from '../support/cliProcess.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise, setCreatedAt } from './seed.js';

describe('CLI: discrepancies, discrepancy, ack, resolve, dismiss (child processes)', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('disc_cli');
  let sql: Pool;
  const d: Record<string, string> = {};

  function cli(...args: string[]): Promise<CliRun> {
    return runCli(args, { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
  }

  before(async () => {
    sql = sqlPool(db.url);
    d.a = await raise(sql, {
      partner: 'acme-pay',
      reference: 'order-a',
      amountAtRisk: '12345678901234567.89',
    });
    d.b = await raise(sql, {
      partner: 'globex-sms',
      kind: 'missing_at_partner',
      reference: '=1+1',
      currency: 'USD',
    });
    d.c = await raise(sql, { partner: 'acme-pay', kind: 'duplicate_execution', reference: 'order-c' });
    await setCreatedAt(sql, d.a, '2024-05-01T10:00:00Z');
    await setCreatedAt(sql, d.b, '2024-05-02T10:00:00Z');
    await setCreatedAt(sql, d.c, '2024-05-03T10:00:00Z');
  });
  after(async () => {
    await sql.end();
  });

  it('discrepancies --format json prints the documented array, newest first', async () => {
    const run = await cli('discrepancies', '--format', 'json');
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
    const rows = JSON.parse(run.stdout);
    expect(rows.map((row: { id: string }) => row.id)).to.deep.equal([d.c, d.b, d.a]);
    expect(rows[2]).to.include({
      id: d.a,
      kind: 'amount_mismatch',
      partner: 'acme-pay',
      status: 'open',
      reference: 'order-a',
      amountAtRisk: '12345678901234567.89',
      currency: 'BRL',
      createdAt: '2024-05-01T10:00:00.000Z',
    });
    expect(rows[2]).to.have.property('partnerReference');
  });

  it('filters repeat or take commas; --since takes an ISO date', async () => {
    const run = await cli(
      'discrepancies',
      '--format',
      'json',
      '--partner',
      'acme-pay,globex-sms',
      '--kind',
      'amount_mismatch',
      '--kind',
      'missing_at_partner',
      '--since',
      '2024-05-02',
    );
    expect(run.code).to.equal(0);
    expect(JSON.parse(run.stdout).map((row: { id: string }) => row.id)).to.deep.equal([d.b]);
  });

  it('the default table and the csv / html exports to a file', async () => {
    const table = await cli('discrepancies', '--status', 'open');
    expect(table.code).to.equal(0);
    expect(table.stdout.split('\n')[0]).to.match(/^\s*ID {2}RAISED/);
    expect(table.stdout.trimEnd().split('\n')).to.have.length(4);

    const dir = mkdtempSync(join(tmpdir(), 'il-disc-cli-'));
    const csv = await cli('discrepancies', '--format', 'csv', '--output', join(dir, 'out.csv'));
    expect(csv.code).to.equal(0);
    expect(csv.stdout).to.equal(`wrote 3 discrepancies (csv) to ${join(dir, 'out.csv')}\n`);
    const bytes = readFileSync(join(dir, 'out.csv'));
    expect([...bytes.subarray(0, 3)]).to.deep.equal([0xef, 0xbb, 0xbf]);
    expect(bytes.toString('utf8')).to.contain("'=1+1");

    const html = await cli('discrepancies', '--format', 'html');
    expect(html.code).to.equal(0);
    expect(html.stdout).to.match(/^<!DOCTYPE html>/);
    expect(html.stdout).to.contain('<svg');
  });

  it('usage errors exit 2: unknown flag, unknown status, bad --since, bad --format', async () => {
    for (const args of [
      ['discrepancies', '--frobnicate'],
      ['discrepancies', '--status', 'closed'],
      ['discrepancies', '--since', 'last tuesday'],
      ['discrepancies', '--format', 'xlsx'],
      ['discrepancy'],
    ]) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.stdout).to.equal('');
    }
  });

  it('discrepancy <id> --json: the detail with history; an unknown id exits 1', async () => {
    const run = await cli('discrepancy', d.a, '--json');
    expect(run.code).to.equal(0);
    const detail = JSON.parse(run.stdout);
    expect(detail).to.include({
      id: d.a,
      status: 'open',
      amountAtRisk: '12345678901234567.89',
      intent: null,
      run: null,
    });
    expect(detail.partnerRecords).to.deep.equal([]);
    expect(detail.history).to.have.length(1);
    expect(detail.history[0]).to.include({ fromStatus: null, toStatus: 'open', actor: 'reconciler' });

    const text = await cli('discrepancy', d.a);
    expect(text.code).to.equal(0);
    expect(text.stdout).to.contain(`Discrepancy ${d.a}: amount_mismatch [open]`);
    expect(text.stdout).to.contain('History (oldest first)');

    const missing = await cli('discrepancy', '987654321', '--json');
    expect(missing.code).to.equal(1);
    expect(missing.stdout).to.equal('');
    expect(missing.stderr).to.contain('no discrepancy 987654321');
  });

  it('resolve without --note (or with a blank one, or without --by, or without ids) exits 2 and changes nothing', async () => {
    for (const args of [
      ['resolve', d.a, '--by', 'alice'],
      ['resolve', d.a, '--by', 'alice', '--note', '   '],
      ['resolve', d.a, '--note', 'fixed'],
      ['resolve', '--note', 'fixed', '--by', 'alice'],
    ]) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).to.equal(2);
    }
    const status = await sql.query('SELECT status FROM discrepancies WHERE id = $1', [d.a]);
    expect(status.rows[0].status).to.equal('open');
  });

  it('resolve of an unknown id exits 1 naming it, and nothing changes (all or nothing)', async () => {
    const run = await cli('resolve', d.a, '987654321', '--note', 'fixed', '--by', 'alice');
    expect(run.code).to.equal(1);
    expect(run.stdout).to.equal('');
    expect(run.stderr).to.contain('987654321: no such discrepancy');
    expect(run.stderr).to.contain('nothing was changed');
    const status = await sql.query('SELECT status FROM discrepancies WHERE id = $1', [d.a]);
    expect(status.rows[0].status).to.equal('open');
  });

  it('ack then resolve exit 0; resolving again exits 1; the history shows both changes', async () => {
    const ack = await cli('ack', d.a, d.c, '--note', 'looking into it', '--by', 'alice', '--assignee', 'bob');
    expect(ack.code).to.equal(0);
    expect(ack.stdout).to.equal(`acknowledged 2 discrepancies: ${d.a}, ${d.c} (by alice, assigned to bob)\n`);
    const resolve = await cli('resolve', d.a, '--note', 'acme refunded', '--by', 'bob');
    expect(resolve.code).to.equal(0);
    expect(resolve.stdout).to.equal(`resolved 1 discrepancy: ${d.a} (by bob)\n`);
    const again = await cli('resolve', d.a, '--note', 'again', '--by', 'bob');
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain(`${d.a}: is resolved (resolve needs open or acknowledged)`);
    const dismiss = await cli('dismiss', d.b, '--note', 'test order', '--by', 'carol');
    expect(dismiss.code).to.equal(0);

    const detail = JSON.parse((await cli('discrepancy', d.a, '--json')).stdout);
    expect(detail.status).to.equal('resolved');
    expect(detail.assignee).to.equal('bob');
    expect(
      detail.history.map(
        (h: { fromStatus: string; toStatus: string; actor: string; note: string; assignee: string }) => [
          h.fromStatus,
          h.toStatus,
          h.actor,
          h.note,
          h.assignee,
        ],
      ),
    ).to.deep.equal([
      [null, 'open', 'reconciler', detail.summary, null],
      // --by is typed, not signed in: recorded as a script's word with the OS user that ran it.
      ['open', 'acknowledged', `script:alice (os user ${userInfo().username})`, 'looking into it', 'bob'],
      ['acknowledged', 'resolved', `script:bob (os user ${userInfo().username})`, 'acme refunded', null],
    ]);
    const list = JSON.parse(
      (await cli('discrepancies', '--format', 'json', '--status', 'open,acknowledged')).stdout,
    );
    expect(list.map((row: { id: string; status: string }) => [row.id, row.status])).to.deep.equal([
      [d.c, 'acknowledged'],
    ]);
  });
});
