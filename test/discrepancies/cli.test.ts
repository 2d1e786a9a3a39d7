import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Pool } from 'pg';
import { hasSoffice, openXlsxInCalc, SOFFICE } from '../support/calcCells.js';
import { type CliRun, hasScript, runCli, runCliOnTerminal } from '../support/cliProcess.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { raise, setCreatedAt } from './seed.js';

const execFileAsync = promisify(execFile);
/** The CLI entry point of the same build as this test. */
const CLI_MAIN = join(__dirname, '../../src/cli/main.js');

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

  it('--format xlsx --output: a workbook Calc opens, references and formula-looking text as text cells', async function () {
    if (!hasSoffice()) {
      if (process.env.CI) throw new Error(`${SOFFICE} does not exist; .ci/run installs libreoffice-calc`);
      this.skip();
    }
    const dir = mkdtempSync(join(tmpdir(), 'il-disc-xlsx-'));
    const file = join(dir, 'out.xlsx');
    const run = await cli(
      'discrepancies',
      '--format',
      'xlsx',
      '--sort',
      'createdAt',
      '--direction',
      'asc',
      '--output',
      file,
    );
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
    expect(run.stdout).to.equal(`wrote 3 discrepancies (xlsx) to ${file}\n`);
    expect((await execFileAsync('unzip', ['-t', file])).stdout).to.contain('No errors detected');
    const sheet = await openXlsxInCalc(readFileSync(file));
    const at = (row: number, name: string) =>
      sheet.rows[row][sheet.rows[0].findIndex((cell) => cell.text === name)];
    expect(sheet.rows.slice(1).map((cells) => cells[0].value)).to.deep.equal([d.a, d.b, d.c]);
    // d.a: 19 significant digits, kept exact as text; d.b: `=1+1` is text as it is, no `'`, no formula.
    expect(at(1, 'amountAtRisk')).to.include({ type: 'string', text: '12345678901234567.89' });
    expect(at(2, 'reference')).to.deep.equal({ type: 'string', text: '=1+1' });
    expect(at(2, 'amountAtRisk')).to.include({ type: 'float', text: '10.00', value: '10' });
    expect(at(3, 'createdAt (UTC)')).to.include({ type: 'date', text: '2024-05-03 10:00:00' });
    expect(sheet.xml).not.to.contain('table:formula');
  });

  it('--format xlsx refuses a terminal stdout (exit 2, nothing written), and writes to a redirected one', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'il-disc-xlsx-'));
    const file = join(dir, 'redirected.xlsx');
    const env = { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
    await execFileAsync(
      'sh',
      ['-c', `"$0" "$1" discrepancies --format xlsx > "$2"`, process.execPath, CLI_MAIN, file],
      {
        env,
      },
    );
    expect((await execFileAsync('python3', ['-m', 'zipfile', '-t', file])).stdout).to.contain('Done testing');
    expect(readFileSync(file).subarray(0, 4).toString('latin1')).to.equal('PK\u0003\u0004');
    if (!hasScript) this.skip();
    const terminal = await runCliOnTerminal(['discrepancies', '--format', 'xlsx'], {
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
    });
    expect(terminal.code).to.equal(2);
    expect(terminal.stdout).to.match(
      /^--format xlsx writes a binary workbook, not text for a terminal: give --output FILE\.xlsx \(or redirect stdout\)\r\n/,
    );
    expect(terminal.stdout).not.to.contain('PK');
  });

  it('usage errors exit 2: unknown flag, unknown status, bad --since, bad --format', async () => {
    for (const args of [
      ['discrepancies', '--frobnicate'],
      ['discrepancies', '--status', 'closed'],
      ['discrepancies', '--since', 'last tuesday'],
      ['discrepancies', '--format', 'pdf'],
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

  // Last: it adds a discrepancy of its own partner, which the counts above do not expect.
  it("--format xlsx refuses a cell over Excel's 32,767 characters: exit 1 naming it, no file left behind", async () => {
    const id = await raise(sql, { partner: 'long-pay', summary: 's'.repeat(40_000) });
    const dir = mkdtempSync(join(tmpdir(), 'il-disc-xlsx-'));
    const file = join(dir, 'long.xlsx');
    const run = await cli('discrepancies', '--format', 'xlsx', '--partner', 'long-pay', '--output', file);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.contain(
      `intent-ledger discrepancies failed: discrepancy ${id}: summary is 40000 characters, more than the 32767 an Excel cell holds`,
    );
    expect(readdirSync(dir)).to.deep.equal([]);
  });
});
