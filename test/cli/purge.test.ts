import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  completedIntent,
  inProgressIntent,
  notExecutedIntent,
  rejectedIntent,
  spec,
  unknownIntent,
} from '../reconcile/support.js';
import { hasScript, runCli, runCliOnTerminal, spawnCli } from '../support/cliProcess.js';
import { withDatabase } from '../support/databaseUrl.js';
import { rejectionOf, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { testLedger } from '../support/testLedger.js';

const OLD = `now() - interval '2 days'`;
/** A `\r` that is not the end of a line: a progress bar redrawing in place. */
const REDRAW = /\r(?!\n)/;

describe('purge: Ledger.purge progress and the intent-ledger purge command', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('purge_cli');
  let ledger: Ledger;
  let sql: Pool;
  let counter = 0;
  const env = () => ({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' });

  before(async () => {
    ledger = await testLedger(db.url);
    sql = sqlPool(db.url);
  });
  after(async () => {
    await ledger?.close();
    await sql?.end();
  });

  const next = () => spec('acme-pay', `purge-${++counter}`);

  /** Moves intents (and their attempts) two days into the past, as the purge window sees them. */
  async function backdate(ids: string[]): Promise<void> {
    await sql.query(
      `UPDATE intents SET created_at = ${OLD}, updated_at = ${OLD},
              settled_at = CASE WHEN settled_at IS NOT NULL THEN ${OLD} END,
              lease_expires_at = CASE WHEN lease_expires_at IS NOT NULL THEN ${OLD} END
        WHERE id = ANY ($1)`,
      [ids],
    );
    await sql.query(
      `UPDATE intent_attempts SET started_at = ${OLD}, lease_expires_at = ${OLD} WHERE intent_id = ANY ($1)`,
      [ids],
    );
  }

  async function oldCompleted(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await completedIntent(ledger, next(), `nsu-${counter}`));
    await backdate(ids);
    return ids;
  }

  async function oldInbox(consumer: string, count: number): Promise<void> {
    await sql.query(
      `INSERT INTO inbox (consumer, message_id, processed_at)
       SELECT $1, g::text, ${OLD} FROM generate_series(1, $2) g`,
      [consumer, count],
    );
  }

  async function existing(ids: string[]): Promise<string[]> {
    const rows = await sql.query<{ id: string }>('SELECT id FROM intents WHERE id = ANY ($1)', [ids]);
    return rows.rows.map((row) => row.id).sort();
  }

  describe('Ledger.purge onProgress', () => {
    beforeEach(async () => {
      await ledger.purge({ olderThan: '1d' }); // whatever earlier tests left old
    });

    it('is called after every batch with the running totals, intents first, ending at the result', async () => {
      await oldCompleted(5);
      await oldInbox('progress', 3);
      const seen: { intents: number; inbox: number }[] = [];
      const result = await ledger.purge({
        olderThan: '1d',
        batchSize: 2,
        onProgress: (deleted) => seen.push(deleted),
      });
      expect(result).to.deep.equal({ intents: 5, inbox: 3, interrupted: false });
      expect(seen).to.deep.equal([
        { intents: 2, inbox: 0 },
        { intents: 4, inbox: 0 },
        { intents: 5, inbox: 0 },
        { intents: 5, inbox: 2 },
        { intents: 5, inbox: 3 },
      ]);
    });

    it('a listener that throws changes nothing: the purge runs to the end', async () => {
      const ids = await oldCompleted(3);
      await oldInbox('throwing', 1);
      let calls = 0;
      const result = await ledger.purge({
        olderThan: '1d',
        batchSize: 1,
        onProgress: () => {
          calls++;
          throw new Error('the terminal went away');
        },
      });
      expect(result).to.deep.equal({ intents: 3, inbox: 1, interrupted: false });
      expect(calls).to.be.greaterThan(3);
      expect(await existing(ids)).to.deep.equal([]);
    });

    it('a fired signal stops it before the next batch; what was deleted stays, and the next purge goes on', async () => {
      const ids = await oldCompleted(4);
      await oldInbox('signal', 2);
      const abort = new AbortController();
      const first = await ledger.purge({
        olderThan: '1d',
        batchSize: 1,
        signal: abort.signal,
        onProgress: (deleted) => {
          if (deleted.intents === 2) abort.abort();
        },
      });
      expect(first).to.deep.equal({ intents: 2, inbox: 0, interrupted: true });
      expect(await existing(ids)).to.have.length(2);

      const stoppedBefore = new AbortController();
      stoppedBefore.abort();
      expect(await ledger.purge({ olderThan: '1d', signal: stoppedBefore.signal })).to.deep.equal({
        intents: 0,
        inbox: 0,
        interrupted: true,
      });
      expect(await existing(ids)).to.have.length(2);

      expect(await ledger.purge({ olderThan: '1d', signal: new AbortController().signal })).to.deep.equal({
        intents: 2,
        inbox: 2,
        interrupted: false,
      });
      expect(await existing(ids)).to.deep.equal([]);
    });

    it('a signal fired during the last, short batch: the purge finished, and says so', async () => {
      await oldCompleted(2);
      await oldInbox('signal-late', 1);
      const abort = new AbortController();
      const result = await ledger.purge({
        olderThan: '1d',
        batchSize: 2,
        signal: abort.signal,
        onProgress: (deleted) => {
          if (deleted.inbox === 1) abort.abort();
        },
      });
      expect(result).to.deep.equal({ intents: 2, inbox: 1, interrupted: false });
    });

    it('refuses a batch size that could never finish', async () => {
      for (const batchSize of [0, -1, 1.5])
        expect(await rejectionOf(ledger.purge({ olderThan: '1d', batchSize }))).to.be.instanceOf(RangeError);
    });
  });

  describe('intent-ledger purge', () => {
    it('usage errors exit 2 with the reason and the usage, touching nothing', async () => {
      const [old] = await oldCompleted(1);
      const cases: [string[], RegExp][] = [
        [['purge'], /purge needs --older-than/],
        [['purge', '--older-than', 'a fortnight'], /--older-than: "a fortnight" is not a duration/],
        [['purge', '--older-than=-1d'], /is not a duration/],
        [['purge', '--older-than', '1d', '--batch-size', '0'], /--batch-size must be a whole number >= 1/],
        [['purge', '--older-than', '1d', 'everything'], /positional/i],
        [['purge', '--older-than', '1d', '--force'], /--force/],
        [
          ['purge', '--older-than', '0s'],
          /--older-than 0s is shorter than 1d: settled intents are what stop/,
        ],
        [['purge', '--older-than', '23h'], /--older-than 23h is shorter than 1d/],
      ];
      for (const [args, reason] of cases) {
        const run = await runCli(args, env());
        expect(run.code, args.join(' ')).to.equal(2);
        expect(run.stderr).to.match(reason);
        expect(run.stderr).to.contain('intent-ledger purge --older-than 30d');
        expect(run.stdout).to.equal('');
      }
      expect(await existing([old])).to.deep.equal([old]);
      await ledger.purge({ olderThan: '1d' });
    });

    it('--json deletes exactly the old settled intents and inbox rows and prints { intents, inbox, interrupted }', async () => {
      const purged = [
        ...(await oldCompleted(2)),
        await rejectedIntent(ledger, next()),
        await notExecutedIntent(ledger, next()),
      ];
      const kept = {
        unknown: await unknownIntent(ledger, next()),
        inProgress: await inProgressIntent(ledger, next()),
        disputed: await completedIntent(ledger, next(), 'nsu-disputed'),
        recent: await completedIntent(ledger, next(), 'nsu-recent'),
      };
      await backdate([...purged, kept.unknown, kept.inProgress, kept.disputed]);
      await sql.query(
        `INSERT INTO discrepancies (kind, partner, intent_id, summary, dedupe_key)
         VALUES ('missing_at_partner', 'acme-pay', $1, 'still being looked at', 'purge-cli-disputed')`,
        [kept.disputed],
      );
      await oldInbox('json', 3);
      await sql.query(`INSERT INTO inbox (consumer, message_id) VALUES ('json', 'recent')`);

      const run = await runCli(['purge', '--older-than', '1d', '--batch-size', '2', '--json'], env());
      expect(run.stderr).to.equal('');
      expect(run.code).to.equal(0);
      expect(JSON.parse(run.stdout)).to.deep.equal({ intents: 4, inbox: 3, interrupted: false });
      expect(run.stdout.trim().split('\n')).to.have.length(1);

      expect(await existing([...purged, ...Object.values(kept)])).to.deep.equal(Object.values(kept).sort());
      const attempts = await sql.query(
        'SELECT count(*)::int AS n FROM intent_attempts WHERE intent_id = ANY ($1)',
        [purged],
      );
      expect(attempts.rows[0].n).to.equal(0);
      const inbox = await sql.query(`SELECT message_id FROM inbox WHERE consumer = 'json'`);
      expect(inbox.rows).to.deep.equal([{ message_id: 'recent' }]);
    });

    it('prints a summary, and without a terminal draws no progress on stderr', async () => {
      await oldCompleted(3);
      await oldInbox('summary', 1);
      const run = await runCli(['purge', '--older-than', '1d', '--batch-size', '1'], env());
      expect(run.code).to.equal(0);
      expect(run.stdout).to.equal('purged 3 settled intents and 1 inbox rows older than 1d\n');
      expect(run.stderr).to.equal('');

      const again = await runCli(['purge', '--older-than', '1d'], env());
      expect(again.code).to.equal(0);
      expect(again.stdout).to.equal('purged 0 settled intents and 0 inbox rows older than 1d\n');
    });

    /** Starts `purge --batch-size 1` over `ids` and sends SIGINT once the first rows are gone. */
    async function interruptedPurge(ids: string[], extra: string[]) {
      const child = spawnCli(['purge', '--older-than', '1d', '--batch-size', '1', ...extra], env());
      let exited = false;
      const settled = () => {
        exited = true;
      };
      child.done.then(settled, settled);
      // Interrupted once it is under way, as a person watching the bar would.
      while (!exited && (await existing(ids)).length === ids.length)
        await new Promise((r) => setTimeout(r, 5));
      expect(exited, 'the purge ended before it could be interrupted').to.equal(false);
      child.process.kill('SIGINT');
      return child.done;
    }

    it('Ctrl-C stops it after the batch in flight: it says how far it got, exits 130, and a rerun goes on', async () => {
      const ids = await oldCompleted(150);
      const json = await interruptedPurge(ids, ['--json']);
      expect(json.code, json.stderr).to.equal(130);
      const out = JSON.parse(json.stdout);
      expect(out.interrupted).to.equal(true);
      let left = await existing(ids);
      expect(out.intents).to.equal(ids.length - left.length);
      expect(left.length).to.be.greaterThan(0);

      const text = await interruptedPurge(left, []);
      expect(text.code, text.stderr).to.equal(130);
      const before = left.length;
      left = await existing(ids);
      expect(text.stdout).to.equal(
        `purge interrupted: purged ${before - left.length} settled intents and 0 inbox rows older than 1d before stopping; run it again to go on\n`,
      );
      expect(left.length).to.be.greaterThan(0);

      const again = await runCli(['purge', '--older-than', '1d'], env());
      expect(again.code).to.equal(0);
      expect(again.stdout).to.equal(`purged ${left.length} settled intents and 0 inbox rows older than 1d\n`);
      expect(await existing(ids)).to.deep.equal([]);
    });

    it('exits 1 when the database cannot be reached', async () => {
      const run = await runCli(['purge', '--older-than', '1d'], {
        DATABASE_URL: withDatabase(db.url, 'il_purge_no_such_database'),
      });
      expect(run.code).to.equal(1);
      expect(run.stderr).to.match(/intent-ledger purge failed/);
      expect(run.stdout).to.equal('');
    });

    it('on a terminal draws a bar against the count taken first; with --json it stays quiet', async function () {
      if (!hasScript) this.skip();
      await oldCompleted(5);
      await oldInbox('terminal', 2);
      const run = await runCliOnTerminal(['purge', '--older-than', '1d', '--batch-size', '2'], env());
      expect(run.code, run.stdout).to.equal(0);
      expect(run.stdout).to.match(REDRAW);
      expect(run.stdout).to.match(/\rpurging \[#+\] 7\/7 100% /);
      expect(run.stdout).to.match(/\r\npurged 5 settled intents and 2 inbox rows older than 1d\r\n$/);

      await oldCompleted(1);
      const json = await runCliOnTerminal(['purge', '--older-than', '1d', '--json'], env());
      expect(json.code).to.equal(0);
      expect(json.stdout).not.to.match(REDRAW);
      expect(JSON.parse(json.stdout)).to.deep.equal({ intents: 1, inbox: 0, interrupted: false });
    });
  });
});
