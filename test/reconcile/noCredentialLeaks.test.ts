import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { reconcile } from '../../src/reconcile/reconcile.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { ERROR_TEXT_MAX } from '../../src/shared/capText.js';
import { type CliRun, runCli } from '../support/cliProcess.js';
import { capturingLogger } from '../support/testLedger.js';
import {
  csvReconciler,
  dbNow,
  fakePartnerReconciler,
  minutes,
  partnerName,
  place,
  spec,
  unknownIntent,
  useReconcileFixture,
} from './support.js';

const USER = 'finance-bot-7d1e';
const PASSWORD = 'pw-Zq8sLk2Vv9Hx';
const TOKEN = 'tok_live_4f9a2c7e1b8d6053';
/** A partner's own signed link in a redirect's path, as download redirects often carry. */
const SIGNATURE = 'sig0123456789abcdefXYZ';
const SECRETS = [USER, PASSWORD, TOKEN, SIGNATURE];
const REVIEW_TOKEN = 'leak-test-review-token-0123456789';

function expectNoSecret(where: string, text: string): void {
  for (const secret of SECRETS) expect(text, `${where} holds ${secret}`).not.to.contain(secret);
}

describe('reconcile: no credential leaves its place (baseUrl userinfo, tokens in redirects, huge error texts)', function () {
  this.timeout(120_000);
  const fx = useReconcileFixture('rec_no_leaks');
  let fake: FakePartner;
  let redirector: Server;
  let redirectorUrl: string;
  const redirectorSaw: { apiKey: unknown; authorization: unknown }[] = [];
  let reconcilers: string;
  const printed: CliRun[] = [];
  const partners = { listing: partnerName('leak-ok'), redirect: partnerName('leak-redirect') };
  const withCredentials = (url: string) => url.replace('http://', `http://${USER}:${PASSWORD}@`);

  before(async () => {
    fake = await startFakePartner();
    redirector = createServer((request, response) => {
      redirectorSaw.push({
        apiKey: request.headers['x-api-key'],
        authorization: request.headers.authorization,
      });
      response.writeHead(302, {
        location: `http://${USER}:${PASSWORD}@127.0.0.1:1/download/${TOKEN}/${SIGNATURE}/list?sig=${SIGNATURE}`,
      });
      response.end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    redirectorUrl = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
    const now = await dbNow(fx.sql);
    for (const partner of Object.values(partners)) {
      const id = await unknownIntent(fx.ledger, spec(partner, `${partner}-stuck`));
      await place(fx.sql, id, { startedAt: minutes(now, -180) });
    }
    fake.seed([
      {
        id: 'ch_orphan',
        reference: 'nobody',
        amount: '3.00',
        currency: 'BRL',
        executedAt: minutes(now, -100),
      },
    ]);
    reconcilers = join(fx.dir, 'reconcilers');
    mkdirSync(reconcilers);
    // The token goes in its own header: baseUrl's user and password are the Authorization (Basic).
    const auth = { env: 'LEAK_TOKEN', header: 'X-Api-Key', scheme: '' };
    writeFileSync(
      join(reconcilers, 'listing.js'),
      `module.exports = ${JSON.stringify(fakePartnerReconciler(partners.listing, { baseUrl: withCredentials(fake.url) }))};\n`,
    );
    writeFileSync(
      join(reconcilers, 'redirect.js'),
      `module.exports = ${JSON.stringify(fakePartnerReconciler(partners.redirect, { baseUrl: withCredentials(redirectorUrl), auth, retries: 0 }))};\n`,
    );
    for (const partner of Object.values(partners)) {
      for (const json of [['--json'], []]) {
        printed.push(
          await runCli(['reconcile', partner, '--reconcilers', reconcilers, ...json], {
            DATABASE_URL: fx.db.url,
            LOG_LEVEL: 'debug',
            LEAK_TOKEN: TOKEN,
          }),
        );
      }
    }
  });
  after(async () => {
    await fake?.close();
    await new Promise((resolve) => redirector?.close(resolve));
  });

  it('the run with credentials in baseUrl succeeds, and its source is the address without them', async () => {
    const [json] = printed;
    expect(json.code, json.stderr).to.equal(0);
    const report = JSON.parse(json.stdout);
    expect(report.status).to.equal('succeeded');
    expect(report.source).to.equal(`${fake.url}/v1/settlements`);
    expect(report.discrepancies.orphan_partner_record).to.equal(1);
    expect(fake.requests).to.be.greaterThan(0);
  });

  it('the credentials still travel where they belong: the token in its header, user and password as Basic auth', () => {
    expect(redirectorSaw).to.have.length(2);
    for (const saw of redirectorSaw)
      expect(saw).to.deep.equal({
        apiKey: TOKEN,
        authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`,
      });
  });

  it('user and password in baseUrl with a token for the Authorization header too: a failed run saying to keep one', async () => {
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: fakePartnerReconciler(partners.listing, {
        baseUrl: withCredentials(fake.url),
        auth: { env: 'LEAK_TOKEN' },
      }),
      env: { LEAK_TOKEN: TOKEN },
    });
    expect(run.status).to.equal('failed');
    expect(run.error).to.match(
      /baseUrl carries a user and password and auth sends a token in the Authorization header too/,
    );
    expectNoSecret('the run', JSON.stringify(run));
  });

  it('the redirect fails the run naming where it points, with the token, the signed path and userinfo redacted', async () => {
    const json = printed[2];
    expect(json.code).to.equal(1);
    const report = JSON.parse(json.stdout);
    expect(report.status).to.equal('failed');
    expect(report.source).to.equal(`${redirectorUrl}/v1/settlements`);
    expect(report.error).to.equal(
      `partner ${partners.redirect}: answered HTTP 302 at page 1 (a redirect to ` +
        'http://127.0.0.1:1/download/[redacted]/[redacted]/list): set baseUrl to the final address',
    );
  });

  it('nothing printed, logged (LOG_LEVEL=debug), stored or served holds a secret', async () => {
    expect(printed.map((run) => run.stderr).join('')).to.contain(partners.redirect); // the logs were written
    for (const [i, run] of printed.entries()) {
      expectNoSecret(`stdout of CLI run ${i}`, run.stdout);
      expectNoSecret(`stderr of CLI run ${i}`, run.stderr);
    }
    for (const table of ['reconciliation_runs', 'discrepancies', 'discrepancy_history', 'partner_records']) {
      const rows = await fx.sql.query(`SELECT row_to_json(t)::text AS row FROM ${table} t`);
      expect(rows.rows.length, table).to.be.greaterThan(0);
      expectNoSecret(table, rows.rows.map((r) => r.row).join('\n'));
    }
    const runs = await fx.sql.query('SELECT DISTINCT source FROM reconciliation_runs WHERE partner = $1', [
      partners.listing,
    ]);
    expect(runs.rows).to.deep.equal([{ source: `${fake.url}/v1/settlements` }]);

    const orphan = await fx.sql.query<{ id: string }>(
      "SELECT id FROM discrepancies WHERE partner = $1 AND kind = 'orphan_partner_record'",
      [partners.listing],
    );
    const app: FastifyInstance = createReviewServer({ pool: fx.sql, token: REVIEW_TOKEN });
    try {
      await app.ready();
      const headers = { authorization: `Bearer ${REVIEW_TOKEN}` };
      const api = await app.inject({
        method: 'GET',
        url: `/api/discrepancies/${orphan.rows[0].id}`,
        headers,
      });
      expect(api.statusCode).to.equal(200);
      expect(api.json().run.source).to.equal(`${fake.url}/v1/settlements`);
      expectNoSecret('/api/discrepancies/:id', api.body);
      const page = await app.inject({ method: 'GET', url: `/discrepancies/${orphan.rows[0].id}`, headers });
      expect(page.statusCode).to.equal(200);
      expect(page.body).to.contain(`${fake.url}/v1/settlements`);
      expectNoSecret('the discrepancy page', page.body);
    } finally {
      await app.close();
    }
  });

  it('a run stored before the fix with credentials in its source is shown without them', async () => {
    const run = await fx.sql.query<{ id: string }>(
      `INSERT INTO reconciliation_runs (partner, trigger, source, status, started_at, finished_at)
       VALUES ('old-run', 'manual', $1, 'succeeded', now(), now()) RETURNING id`,
      [`${withCredentials('http://partner.example')}/v1/settlements`],
    );
    const id = await fx.sql.query<{ id: string }>(
      `INSERT INTO discrepancies (kind, partner, run_id, summary, details, dedupe_key)
       VALUES ('orphan_partner_record', 'old-run', $1, 'old', '{}', 'old-run-1') RETURNING id`,
      [run.rows[0].id],
    );
    const app = createReviewServer({ pool: fx.sql, token: REVIEW_TOKEN });
    try {
      await app.ready();
      const api = await app.inject({
        method: 'GET',
        url: `/api/discrepancies/${id.rows[0].id}`,
        headers: { authorization: `Bearer ${REVIEW_TOKEN}` },
      });
      expect(api.json().run.source).to.equal('http://partner.example/v1/settlements');
      expectNoSecret('an old run on the API', api.body);
    } finally {
      await app.close();
    }
  });

  it('a 1.8 MB header line gives a stored and logged error of at most 2,000 characters, saying it was cut', async () => {
    const partner = partnerName('leak-huge');
    const file = join(fx.dir, 'huge-header.csv');
    writeFileSync(file, `${'reference;'.repeat(180_000)}\nx;1\n`);
    const entries: { level: string; object: object; message: string }[] = [];
    const [run] = await reconcile({
      pool: fx.sql,
      reconciler: csvReconciler(partner, file),
      logger: capturingLogger(entries),
    });
    expect(run.status).to.equal('failed');
    expect(run.error!.length).to.be.at.most(ERROR_TEXT_MAX + 60);
    expect(run.error).to.match(/\.\.\. \[cut: \d+ more characters\]$/);
    const stored = await fx.sql.query('SELECT error FROM reconciliation_runs WHERE id = $1', [run.runId]);
    expect(stored.rows[0].error).to.equal(run.error);
    const logged = JSON.stringify(entries);
    expect(logged.length).to.be.below(20_000);
  });
});
