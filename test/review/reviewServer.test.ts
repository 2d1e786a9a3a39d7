import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Pool } from 'pg';
import { raiseDiscrepancy } from '../../src/discrepancies/sql/raiseDiscrepancy.js';
import { createReviewServer } from '../../src/review/createReviewServer.js';
import { SECURITY_HEADERS } from '../../src/review/registerAuth.js';
import { addReviewUser } from '../../src/review/reviewUsers.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { type SeededReview, seedReview } from './seedReview.js';

const execFileAsync = promisify(execFile);
const TOKEN = 'review-test-token-0123456789abcdef';
const ORIGIN = 'http://localhost:80';
const XSS = '<script>alert("pwned")</script>';

interface Browser {
  cookie: string;
  csrf: string;
}

function form(fields: Record<string, string | string[]>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields))
    for (const v of Array.isArray(value) ? value : [value]) params.append(name, v);
  return params.toString();
}

function csrfOf(page: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!match) throw new Error('no CSRF token on the page');
  return match[1];
}

function cookieOf(response: LightMyRequestResponse): string {
  const header = response.headers['set-cookie'];
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) throw new Error('no Set-Cookie');
  return value.split(';')[0];
}

describe('review server: pages, API, sign-in, CSRF and escaping (fastify inject, real database)', () => {
  const db = useFreshDatabase('review-server');
  let sql: Pool;
  let app: FastifyInstance;
  let seeded: SeededReview;
  let xssId: string;
  let anaToken: string;

  before(async () => {
    sql = sqlPool(db.url);
    seeded = await seedReview(db.url, sql);
    const id = await raiseDiscrepancy(sql, {
      kind: 'orphan_partner_record',
      partner: 'evil-pay',
      intentId: null,
      attempt: null,
      runId: null,
      reference: `ref-${XSS}`,
      partnerReference: XSS,
      amountAtRisk: '1.00',
      currency: 'USD',
      summary: `partner row ${XSS} matches nothing`,
      details: { raw: XSS },
      dedupeKey: 'xss-1',
      actor: `<img src=x onerror=alert(1)>`,
    });
    xssId = id as string;
    anaToken = await addReviewUser(sql, 'ana.souza', 'resolver');
    app = createReviewServer({ pool: sql, token: TOKEN });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await sql?.end();
  });

  async function signIn(token = TOKEN): Promise<Browser> {
    const login = await app.inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      payload: form({ token, next: '/' }),
    });
    expect(login.statusCode).to.equal(303);
    const cookie = cookieOf(login);
    const list = await app.inject({ method: 'GET', url: '/', headers: { cookie } });
    expect(list.statusCode).to.equal(200);
    return { cookie, csrf: csrfOf(list.body) };
  }

  async function statusOf(id: string): Promise<{ status: string; history: number }> {
    const result = await sql.query<{ status: string; history: string }>(
      `SELECT d.status, (SELECT count(*) FROM discrepancy_history h WHERE h.discrepancy_id = d.id) AS history
         FROM discrepancies d WHERE d.id = $1`,
      [id],
    );
    return { status: result.rows[0].status, history: Number(result.rows[0].history) };
  }

  describe('authentication', () => {
    it('redirects a page request without credentials to the login form, keeping where it was going', async () => {
      const response = await app.inject({ method: 'GET', url: '/?partner=acme-pay' });
      expect(response.statusCode).to.equal(303);
      expect(response.headers.location).to.equal('/login?next=%2F%3Fpartner%3Dacme-pay');
      for (const path of ['/discrepancies/1', '/export.xlsx', '/export.csv', '/report']) {
        const other = await app.inject({ method: 'GET', url: path });
        expect(other.statusCode, path).to.equal(303);
        expect(other.headers.location, path).to.match(/^\/login\?next=/);
      }
    });

    it('answers the API without credentials with 401 JSON and changes nothing on POST', async () => {
      const list = await app.inject({ method: 'GET', url: '/api/discrepancies' });
      expect(list.statusCode).to.equal(401);
      expect(list.json()).to.have.nested.property('error.code', 'UNAUTHORIZED');
      const before = await statusOf(seeded.ids.duplicate);
      const post = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${seeded.ids.duplicate}/acknowledge`,
        payload: { by: 'mallory', note: 'x' },
      });
      expect(post.statusCode).to.equal(401);
      const page = await app.inject({
        method: 'POST',
        url: `/discrepancies/${seeded.ids.duplicate}/review`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ action: 'acknowledge', by: 'mallory', note: 'x' }),
      });
      expect(page.statusCode).to.equal(401);
      expect(await statusOf(seeded.ids.duplicate)).to.deep.equal(before);
    });

    it('lets a script in with the right bearer token and refuses a wrong one with 401', async () => {
      const ok = await app.inject({
        method: 'GET',
        url: '/api/discrepancies',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(ok.statusCode).to.equal(200);
      expect(ok.json().total).to.equal(10);
      for (const authorization of [
        `Bearer ${TOKEN}x`,
        'Bearer ',
        `Basic ${TOKEN}`,
        `Bearer ${TOKEN.slice(0, -1)}`,
      ]) {
        const bad = await app.inject({
          method: 'GET',
          url: '/api/discrepancies',
          headers: { authorization },
        });
        expect(bad.statusCode, authorization).to.equal(401);
        expect(bad.body).not.to.contain(TOKEN);
      }
      const page = await app.inject({
        method: 'GET',
        url: '/',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(page.statusCode).to.equal(200);
      expect(page.body).to.contain('Discrepancies');
    });

    it('a wrong token on the login form: 401, the form again with an error, the token never echoed', async () => {
      const wrong = 'not-the-token-but-close-0123456789';
      const response = await app.inject({
        method: 'POST',
        url: '/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
        payload: form({ token: wrong, next: '/' }),
      });
      expect(response.statusCode).to.equal(401);
      expect(response.headers['set-cookie']).to.equal(undefined);
      expect(response.body).to.contain('That token is not right');
      expect(response.body).to.contain('name="token"');
      expect(response.body).not.to.contain(wrong);
      expect(response.body).not.to.contain(TOKEN);
    });

    it('the right token sets an HttpOnly, SameSite=Strict session cookie (Secure only over https) and goes to `next`', async () => {
      const response = await app.inject({
        method: 'POST',
        url: '/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
        payload: form({ token: TOKEN, next: '/?kind=unresolved' }),
      });
      expect(response.statusCode).to.equal(303);
      expect(response.headers.location).to.equal('/?kind=unresolved');
      const cookie = String(response.headers['set-cookie']);
      expect(cookie).to.match(/^il_review_session=[A-Za-z0-9_-]{43}; /);
      expect(cookie).to.contain('HttpOnly');
      expect(cookie).to.contain('SameSite=Strict');
      expect(cookie).to.contain('Path=/');
      expect(cookie).not.to.contain('Secure');
      expect(cookie).not.to.contain(TOKEN);

      const behindTls = createReviewServer({ pool: sql, token: TOKEN, trustProxy: true });
      try {
        const secure = await behindTls.inject({
          method: 'POST',
          url: '/login',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-forwarded-proto': 'https',
            origin: 'https://localhost:80',
          },
          payload: form({ token: TOKEN }),
        });
        expect(secure.statusCode).to.equal(303);
        expect(String(secure.headers['set-cookie'])).to.contain('; Secure');
      } finally {
        await behindTls.close();
      }
    });

    it('never redirects off-site after sign-in', async () => {
      for (const next of [
        '//evil.example/',
        'https://evil.example/',
        '/\\evil.example',
        'javascript:alert(1)',
      ]) {
        const response = await app.inject({
          method: 'POST',
          url: '/login',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: form({ token: TOKEN, next }),
        });
        expect(response.headers.location, next).to.equal('/');
      }
    });

    it('an unknown or signed-out session is no session', async () => {
      const bogus = await app.inject({
        method: 'GET',
        url: '/',
        headers: { cookie: 'il_review_session=forged' },
      });
      expect(bogus.statusCode).to.equal(303);
      const browser = await signIn();
      const out = await app.inject({
        method: 'POST',
        url: '/logout',
        headers: {
          cookie: browser.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: ORIGIN,
        },
        payload: form({ _csrf: browser.csrf }),
      });
      expect(out.statusCode).to.equal(303);
      expect(String(out.headers['set-cookie'])).to.contain('Max-Age=0');
      const after = await app.inject({ method: 'GET', url: '/', headers: { cookie: browser.cookie } });
      expect(after.statusCode).to.equal(303);
      expect(after.headers.location).to.match(/^\/login/);
    });
  });

  describe('cross-site request forgery', () => {
    it('refuses a POST without the CSRF token, or with a wrong one, with 403 and changes nothing', async () => {
      const browser = await signIn();
      const id = seeded.ids.duplicate;
      const before = await statusOf(id);
      for (const csrf of [undefined, '', 'wrong', `${browser.csrf}x`]) {
        const fields: Record<string, string> = { action: 'acknowledge', by: 'Mallory', note: 'sneaky' };
        if (csrf !== undefined) fields._csrf = csrf;
        const response = await app.inject({
          method: 'POST',
          url: `/discrepancies/${id}/review`,
          headers: { cookie: browser.cookie, 'content-type': 'application/x-www-form-urlencoded' },
          payload: form(fields),
        });
        expect(response.statusCode, String(csrf)).to.equal(403);
      }
      const bulk = await app.inject({
        method: 'POST',
        url: '/bulk',
        headers: { cookie: browser.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ action: 'resolve', ids: [id, seeded.ids.orphan], by: 'Mallory', note: 'sneaky' }),
      });
      expect(bulk.statusCode).to.equal(403);
      const api = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/resolve`,
        headers: { cookie: browser.cookie },
        payload: { by: 'Mallory', note: 'sneaky' },
      });
      expect(api.statusCode).to.equal(403);
      expect(await statusOf(id)).to.deep.equal(before);
      expect(await statusOf(seeded.ids.orphan)).to.deep.include({ status: 'open' });
    });

    it('refuses a cross-origin POST (Origin or Referer of another site) even with a valid token', async () => {
      const browser = await signIn();
      const id = seeded.ids.duplicate;
      const before = await statusOf(id);
      for (const headers of [
        { origin: 'https://evil.example' },
        { origin: 'null' },
        { origin: 'http://localhost:8080' },
        { referer: 'https://evil.example/page' },
      ]) {
        const response = await app.inject({
          method: 'POST',
          url: `/discrepancies/${id}/review`,
          headers: {
            cookie: browser.cookie,
            'content-type': 'application/x-www-form-urlencoded',
            ...headers,
          },
          payload: form({ _csrf: browser.csrf, action: 'acknowledge', by: 'Mallory', note: 'sneaky' }),
        });
        expect(response.statusCode, JSON.stringify(headers)).to.equal(403);
      }
      const login = await app.inject({
        method: 'POST',
        url: '/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
        payload: form({ token: TOKEN }),
      });
      expect(login.statusCode).to.equal(403);
      expect(login.headers['set-cookie']).to.equal(undefined);
      expect(await statusOf(id)).to.deep.equal(before);
    });

    it('accepts a same-origin POST from a signed-in resolver; the history records them, not a typed name', async () => {
      const browser = await signIn(anaToken);
      const id = seeded.ids.late;
      const response = await app.inject({
        method: 'POST',
        url: `/discrepancies/${id}/review`,
        headers: {
          cookie: browser.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: ORIGIN,
          referer: `${ORIGIN}/discrepancies/${id}`,
        },
        payload: form({
          _csrf: browser.csrf,
          action: 'acknowledge',
          by: 'Somebody Else', // a typed name is ignored: the page no longer asks for one
          note: 'Checking with umbrella.',
        }),
      });
      expect(response.statusCode).to.equal(303);
      expect(response.headers.location).to.equal(`/discrepancies/${id}`);
      expect(await statusOf(id)).to.deep.equal({ status: 'acknowledged', history: 2 });
      const last = await sql.query(
        'SELECT actor FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id DESC LIMIT 1',
        [id],
      );
      expect(last.rows[0].actor).to.equal('ana.souza');
      const page = await app.inject({
        method: 'GET',
        url: `/discrepancies/${id}`,
        headers: { cookie: browser.cookie },
      });
      expect(page.body).to.contain('Acknowledged by ana.souza.');
      expect(page.body).not.to.contain('name="by"');
      expect(page.body).not.to.contain('Your name');
      expect(page.body).to.contain('Checking with umbrella.');
    });

    it('exempts bearer-token API calls from the CSRF token (no ambient credentials)', async () => {
      const id = seeded.ids.missing;
      const response = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/acknowledge`,
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { by: 'reconcile-bot', note: 'Opened a ticket automatically.' },
      });
      expect(response.statusCode).to.equal(200);
      expect(response.json()).to.deep.include({ changed: [id] });
      expect(response.json().discrepancy.status).to.equal('acknowledged');
    });
  });

  describe('escaping and headers', () => {
    it('renders a partner reference holding <script> as text on the list and the detail page', async () => {
      const browser = await signIn();
      for (const url of ['/?partner=evil-pay', `/discrepancies/${xssId}`]) {
        const page = await app.inject({ method: 'GET', url, headers: { cookie: browser.cookie } });
        expect(page.statusCode, url).to.equal(200);
        expect(page.body, url).not.to.match(/<script/i);
        expect(page.body, url).not.to.contain('<img src=x');
        expect(page.body, url).to.contain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
      }
      const detail = await app.inject({
        method: 'GET',
        url: `/discrepancies/${xssId}`,
        headers: { cookie: browser.cookie },
      });
      expect(detail.body).to.contain('&lt;img src=x onerror=alert(1)&gt;');
      const search = await app.inject({
        method: 'GET',
        url: `/?search=${encodeURIComponent('"><script>x</script>')}`,
        headers: { cookie: browser.cookie },
      });
      expect(search.body).not.to.match(/<script/i);
      expect(search.body).to.contain('value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"');
    });

    it('sends the security headers on pages, redirects, errors, the CSV and the API', async () => {
      const browser = await signIn();
      const responses = [
        await app.inject({ method: 'GET', url: '/login' }),
        await app.inject({ method: 'GET', url: '/' }),
        await app.inject({ method: 'GET', url: '/', headers: { cookie: browser.cookie } }),
        await app.inject({ method: 'GET', url: '/nope', headers: { cookie: browser.cookie } }),
        await app.inject({ method: 'GET', url: '/export.csv', headers: { cookie: browser.cookie } }),
        await app.inject({ method: 'GET', url: '/export.xlsx', headers: { cookie: browser.cookie } }),
        await app.inject({
          method: 'GET',
          url: '/api/discrepancies',
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      ];
      for (const response of responses) {
        expect(response.headers['content-security-policy']).to.equal(
          "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        );
        expect(response.headers['x-content-type-options']).to.equal('nosniff');
        expect(response.headers['referrer-policy']).to.equal('same-origin');
        expect(response.headers['cache-control']).to.equal(SECURITY_HEADERS['cache-control']);
      }
    });

    it('pages load nothing from elsewhere and need no script', async () => {
      const browser = await signIn();
      const page = await app.inject({
        method: 'GET',
        url: `/discrepancies/${seeded.ids.duplicate}`,
        headers: { cookie: browser.cookie },
      });
      expect(page.body).not.to.match(/<script|<link|src="http|href="http/i);
    });
  });

  describe('list, filters and exports', () => {
    const bearer = { authorization: `Bearer ${TOKEN}` };

    it('filters by partner, kind, status, search and since (API and page agree)', async () => {
      const byPartner = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?partner=acme-pay',
        headers: bearer,
      });
      const partnerRows = byPartner.json().rows as { partner: string; id: string }[];
      expect(partnerRows.map((r) => r.partner)).to.deep.equal(['acme-pay', 'acme-pay', 'acme-pay']);
      const byKind = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?kind=amount_mismatch&partner=globex-payouts',
        headers: bearer,
      });
      expect(byKind.json().rows.map((r: { id: string }) => r.id)).to.deep.equal([seeded.ids.resolved]);
      const byStatus = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?status=resolved',
        headers: bearer,
      });
      expect(byStatus.json().total).to.equal(1);
      const search = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?search=pay-77',
        headers: bearer,
      });
      expect(
        search
          .json()
          .rows.map((r: { reference: string }) => r.reference)
          .sort(),
      ).to.deep.equal(['PAY-7702', 'PAY-7781', 'PAY-7790']);
      const recent = await app.inject({
        method: 'GET',
        url: `/api/discrepancies?since=${encodeURIComponent(new Date(Date.now() - 6 * 3600_000).toISOString())}&partner=acme-pay`,
        headers: bearer,
      });
      expect(recent.json().rows.map((r: { id: string }) => r.id)).to.deep.equal([seeded.ids.amountMismatch]);
      const bad = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?kind=nonsense',
        headers: bearer,
      });
      expect(bad.statusCode).to.equal(400);

      const page = await app.inject({
        method: 'GET',
        url: '/?partner=globex-payouts&kind=unresolved',
        headers: bearer,
      });
      expect(page.body).to.contain(`href="/discrepancies/${seeded.ids.unresolved}"`);
      expect(page.body).not.to.contain(`href="/discrepancies/${seeded.ids.missing}"`);
      expect(page.body).to.contain('18,400.00<span class="cur">USD</span>');
    });

    it('sorts by amount at risk numerically and pages through the API', async () => {
      const sorted = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?sort=amountAtRisk&dir=asc&limit=3',
        headers: bearer,
      });
      expect(sorted.json().rows.map((r: { amountAtRisk: string }) => r.amountAtRisk)).to.deep.equal([
        '1.00',
        '9.00',
        '13.20',
      ]);
      const next = await app.inject({
        method: 'GET',
        url: '/api/discrepancies?sort=amountAtRisk&dir=asc&limit=3&offset=3',
        headers: bearer,
      });
      expect(next.json().rows.map((r: { amountAtRisk: string }) => r.amountAtRisk)).to.deep.equal([
        '75.50',
        '87.35',
        '120.00',
      ]);
    });

    it('exports the current filter as CSV: attachment, UTF-8 BOM, header, exactly the matching rows', async () => {
      const browser = await signIn();
      const response = await app.inject({
        method: 'GET',
        url: '/export.csv?partner=acme-pay,umbrella-cards&status=open&sort=amountAtRisk&dir=desc',
        headers: { cookie: browser.cookie },
      });
      expect(response.statusCode).to.equal(200);
      expect(response.headers['content-type']).to.equal('text/csv; charset=utf-8');
      expect(response.headers['content-disposition']).to.match(
        /^attachment; filename="discrepancies-[0-9-]+\.csv"$/,
      );
      const body = response.rawPayload.toString('utf8');
      expect(body.charCodeAt(0)).to.equal(0xfeff);
      const lines = body.slice(1).trimEnd().split('\r\n');
      expect(lines[0].split(',').slice(0, 4)).to.deep.equal(['id', 'kind', 'partner', 'status']);
      const ids = lines.slice(1).map((line) => line.split(',')[0]);
      // Open ones of those partners, largest amount first (`late` was acknowledged by an earlier test).
      expect(ids).to.deep.equal([
        seeded.ids.duplicate,
        seeded.ids.currencyMismatch,
        seeded.ids.amountMismatch,
      ]);
      expect(body).to.contain('1249.90');
    });

    it('exports the current filter as XLSX: attachment, its media type, a whole workbook of exactly the matching rows', async () => {
      const browser = await signIn();
      const url = '/export.xlsx?partner=acme-pay,umbrella-cards&status=open&sort=amountAtRisk&dir=desc';
      for (const headers of [{ cookie: browser.cookie }, bearer]) {
        const response = await app.inject({ method: 'GET', url, headers });
        expect(response.statusCode).to.equal(200);
        expect(response.headers['content-type']).to.equal(
          'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
        );
        expect(response.headers['content-disposition']).to.match(
          /^attachment; filename="discrepancies-[0-9]{8}-[0-9]{4}\.xlsx"$/,
        );
        expect(response.headers['x-content-type-options']).to.equal('nosniff');
        const dir = mkdtempSync(join(tmpdir(), 'review-xlsx-'));
        try {
          const file = join(dir, 'export.xlsx');
          writeFileSync(file, response.rawPayload);
          expect((await execFileAsync('unzip', ['-t', file])).stdout).to.contain('No errors detected');
          const sheet = (await execFileAsync('unzip', ['-p', file, 'xl/worksheets/sheet1.xml'])).stdout;
          // Column A holds each row's id as a number: the open ones of those partners, largest amount first.
          const ids = [...sheet.matchAll(/<c r="A(\d+)" s="\d+"><v>(\d+)<\/v><\/c>/g)].map((m) => m[2]);
          expect(ids).to.deep.equal([
            seeded.ids.duplicate,
            seeded.ids.currencyMismatch,
            seeded.ids.amountMismatch,
          ]);
          expect(sheet).to.contain('<v>1249.90</v>');
          expect(sheet).to.contain('<t xml:space="preserve">ORD-20931</t>');
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
      const bad = await app.inject({ method: 'GET', url: '/export.xlsx?status=closed', headers: bearer });
      expect(bad.statusCode).to.equal(400);
      expect(bad.headers['content-type']).to.equal('text/plain; charset=utf-8');
      expect(bad.body).to.match(/^bad filter: /);
    });

    it('the list page links the XLSX, CSV and `;` CSV exports with its filter', async () => {
      const browser = await signIn();
      const page = await app.inject({
        method: 'GET',
        url: '/?partner=acme-pay&status=open&page=2',
        headers: { cookie: browser.cookie },
      });
      expect(page.body).to.contain('href="/export.xlsx?status=open&amp;partner=acme-pay" download');
      expect(page.body).to.contain('href="/export.csv?status=open&amp;partner=acme-pay" download');
      expect(page.body).to.contain(
        'href="/export.csv?status=open&amp;partner=acme-pay&amp;separator=semicolon" download',
      );
    });

    it('neutralises a formula in a partner reference in the CSV', async () => {
      const id = await raiseDiscrepancy(sql, {
        kind: 'orphan_partner_record',
        partner: 'formula-pay',
        intentId: null,
        attempt: null,
        runId: null,
        reference: null,
        partnerReference: '=HYPERLINK("http://evil.example","x")',
        amountAtRisk: '2.00',
        currency: 'USD',
        summary: 'formula',
        details: {},
        dedupeKey: 'formula-1',
        actor: 'test',
      });
      const response = await app.inject({
        method: 'GET',
        url: '/export.csv?partner=formula-pay',
        headers: bearer,
      });
      expect(response.body).to.contain(`${id},`);
      expect(response.body).not.to.match(/,=HYPERLINK/);
    });

    it('serves the HTML report for the filter', async () => {
      const response = await app.inject({ method: 'GET', url: '/report?partner=acme-pay', headers: bearer });
      expect(response.statusCode).to.equal(200);
      expect(response.headers['content-type']).to.match(/^text\/html/);
      expect(response.body).to.contain('<svg');
      expect(response.body).to.contain('ORD-20931');
      expect(response.body).not.to.contain('PAY-7781');
      expect(response.body).not.to.match(/<script/i);
    });
  });

  describe('review actions', () => {
    const bearer = { authorization: `Bearer ${TOKEN}` };

    it('API: `by` is required, resolving needs a note, refused transitions are 409, unknown ids 404', async () => {
      const id = seeded.ids.currencyMismatch;
      const before = await statusOf(id);
      const noBy = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/resolve`,
        headers: bearer,
        payload: { note: 'done' },
      });
      expect(noBy.statusCode).to.equal(400);
      expect(noBy.json().error.code).to.equal('ACTOR_REQUIRED');
      const noNote = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/resolve`,
        headers: bearer,
        payload: { by: 'Ana' },
      });
      expect(noNote.statusCode).to.equal(422);
      expect(noNote.json().error.code).to.equal('NOTE_REQUIRED');
      expect(await statusOf(id)).to.deep.equal(before);

      const resolved = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/resolve`,
        headers: bearer,
        payload: { by: 'Ana', note: 'Partner corrected the currency in the next file.' },
      });
      expect(resolved.statusCode).to.equal(200);
      const history = await sql.query(
        'SELECT from_status, to_status, actor, note FROM discrepancy_history WHERE discrepancy_id = $1 ORDER BY id',
        [id],
      );
      expect(history.rows.at(-1)).to.deep.equal({
        from_status: 'open',
        to_status: 'resolved',
        // REVIEW_TOKEN is the scripts' shared token: their "by" is recorded as a script's, not as a person.
        actor: 'script:Ana (review token)',
        note: 'Partner corrected the currency in the next file.',
      });

      const again = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/acknowledge`,
        headers: bearer,
        payload: { by: 'Ana', note: 'again' },
      });
      expect(again.statusCode).to.equal(409);
      expect(again.json().error.code).to.equal('DISCREPANCY_TRANSITION_NOT_ALLOWED');
      const missing = await app.inject({
        method: 'POST',
        url: '/api/discrepancies/999999/acknowledge',
        headers: bearer,
        payload: { by: 'Ana', note: 'x' },
      });
      expect(missing.statusCode).to.equal(404);
      expect(missing.json().error.code).to.equal('DISCREPANCY_NOT_FOUND');
      const unknownAction = await app.inject({
        method: 'POST',
        url: `/api/discrepancies/${id}/delete`,
        headers: bearer,
        payload: { by: 'Ana', note: 'x' },
      });
      expect(unknownAction.statusCode).to.equal(404);
    });

    it('page: a refused transition is shown on the detail page, with what was typed kept', async () => {
      const browser = await signIn();
      const id = seeded.ids.resolved;
      const response = await app.inject({
        method: 'POST',
        url: `/discrepancies/${id}/review`,
        headers: {
          cookie: browser.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: ORIGIN,
        },
        payload: form({ _csrf: browser.csrf, action: 'acknowledge', note: 'stale tab' }),
      });
      expect(response.statusCode).to.equal(409);
      expect(response.body).to.contain('Nothing was changed.');
      expect(response.body).to.contain(`${id} is resolved`);
      expect(await statusOf(id)).to.deep.include({ status: 'resolved' });

      const open = seeded.ids.orphan;
      const noNote = await app.inject({
        method: 'POST',
        url: `/discrepancies/${open}/review`,
        headers: {
          cookie: browser.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: ORIGIN,
        },
        payload: form({ _csrf: browser.csrf, action: 'resolve', note: '  ', assignee: 'Bia' }),
      });
      expect(noNote.statusCode).to.equal(422);
      expect(noNote.body).to.contain('note is required');
      expect(noNote.body).not.to.contain('name="by"');
      expect(noNote.body).to.contain('name="assignee" value="Bia"');
      expect(await statusOf(open)).to.deep.include({ status: 'open' });
    });

    it('bulk acknowledge from the list changes every selected one and says so', async () => {
      const browser = await signIn();
      const ids = [seeded.ids.orphan, seeded.ids.unresolved];
      const response = await app.inject({
        method: 'POST',
        url: '/bulk',
        headers: {
          cookie: browser.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: ORIGIN,
        },
        payload: form({
          _csrf: browser.csrf,
          action: 'acknowledge',
          ids,
          by: 'Marina Costa',
          note: 'Taking these two today.',
          return: '?status=open&partner=initech-pix,globex-payouts',
        }),
      });
      expect(response.statusCode).to.equal(303);
      expect(response.headers.location).to.equal('/?status=open&partner=initech-pix%2Cglobex-payouts');
      for (const id of ids) expect(await statusOf(id)).to.deep.equal({ status: 'acknowledged', history: 2 });
      const list = await app.inject({
        method: 'GET',
        url: response.headers.location as string,
        headers: { cookie: browser.cookie },
      });
      const [low, high] = [...ids].sort((a, b) => Number(a) - Number(b));
      expect(list.body).to.contain(`Acknowledged 2 discrepancies: #${low}, #${high}.`);

      const refused = await app.inject({
        method: 'POST',
        url: '/bulk',
        headers: {
          cookie: browser.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          origin: ORIGIN,
        },
        payload: form({ _csrf: browser.csrf, action: 'acknowledge', ids, by: 'Marina Costa', note: 'again' }),
      });
      expect(refused.statusCode).to.equal(303);
      const after = await app.inject({ method: 'GET', url: '/', headers: { cookie: browser.cookie } });
      expect(after.body).to.contain('Nothing was changed.');
    });

    it('a detail that does not exist is a 404 page', async () => {
      const browser = await signIn();
      for (const id of ['999999', 'abc', '1e3', '99999999999999999999']) {
        const response = await app.inject({
          method: 'GET',
          url: `/discrepancies/${id}`,
          headers: { cookie: browser.cookie },
        });
        expect(response.statusCode, id).to.equal(404);
      }
    });
  });
});

// A database of its own: the suite above counts and sorts every discrepancy it holds.
describe('review server: the run card', () => {
  const db = useFreshDatabase('review-run-card');
  let sql: Pool;
  let app: FastifyInstance;
  before(async () => {
    sql = sqlPool(db.url);
    app = createReviewServer({ pool: sql, token: TOKEN });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await sql?.end();
  });

  it("shows an abandoned run's status and reason on the run card, escaped (issue 16, case 7)", async () => {
    // Before migration 0008 the status did not exist and the card showed no reason: this fails there.
    // A run abandoned after committing can only be one from before 0008 (see abandonStaleRuns).
    const { rows } = await sql.query<{ id: string }>(
      `INSERT INTO reconciliation_runs (partner, trigger, source, status, error, started_at, finished_at)
       VALUES ('dead-pay', 'manual', 'dead.csv', 'abandoned', $1, now() - interval '2 hours', now())
       RETURNING id`,
      [`abandoned: started before migration 0008 and never closed <b>${XSS}</b>`],
    );
    const id = await raiseDiscrepancy(sql, {
      kind: 'orphan_partner_record',
      partner: 'dead-pay',
      intentId: null,
      attempt: null,
      runId: rows[0].id,
      reference: null,
      partnerReference: 'NSU-dead',
      amountAtRisk: '3.00',
      currency: 'USD',
      summary: 'raised by a run that died',
      details: {},
      dedupeKey: 'abandoned-run-1',
      actor: 'reconciler',
    });
    const login = await app.inject({
      method: 'POST',
      url: '/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      payload: form({ token: TOKEN, next: '/' }),
    });
    const cookie = cookieOf(login);
    const page = await app.inject({ method: 'GET', url: `/discrepancies/${id}`, headers: { cookie } });
    expect(page.statusCode).to.equal(200);
    expect(page.body).to.contain(`Reconciliation run #${rows[0].id}`);
    expect(page.body).to.contain('<dt>Status</dt><dd>Abandoned</dd>');
    expect(page.body).to.contain(
      '<dt>Why abandoned</dt><dd>abandoned: started before migration 0008 and never closed &lt;b&gt;',
    );
    expect(page.body).not.to.contain('<b>');
  });
});
