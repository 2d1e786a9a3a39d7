import { createServer } from 'node:net';
import { expect } from 'chai';
import type { Pool } from 'pg';
import { addReviewUser } from '../../src/review/reviewUsers.js';
import { runCli, spawnCli } from '../support/cliProcess.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';

/** A port nothing listens on right now (the OS picks it; the CLI then binds it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * `serve` behind an authenticating proxy: the header naming the person is as good as a password, so the CLI
 * honours it only from the proxy's own addresses (`--trusted-proxy`), never with `--trust-proxy` alone
 * (which trusts every peer: anyone who could reach the port could sign in as anybody).
 */
describe('intent-ledger serve: --identity-header only from --trusted-proxy addresses', function () {
  this.timeout(60_000);
  const db = useFreshDatabase('cli_serve_proxy');
  let sql: Pool;
  before(async () => {
    sql = sqlPool(db.url);
    await addReviewUser(sql, 'pat@example.com', 'resolver');
  });
  after(async () => {
    await sql?.end();
  });

  const env = () => ({ DATABASE_URL: db.url, REVIEW_TOKEN: 'serve-proxy-token-0123456789abcdef' });

  it('refuses --identity-header with --trust-proxy alone, a host name as a proxy, and both trust options', async () => {
    for (const [args, message] of [
      [
        ['--trust-proxy', '--identity-header', 'X-Forwarded-Email'],
        '--identity-header needs --trusted-proxy',
      ],
      [['--identity-header', 'X-Forwarded-Email'], '--identity-header needs --trusted-proxy'],
      [['--trusted-proxy', 'proxy.internal'], '--trusted-proxy takes IP addresses'],
      [['--trust-proxy', '--trusted-proxy', '127.0.0.1'], 'not both'],
    ] as const) {
      const run = await runCli(['serve', '--port', String(await freePort()), ...args], env());
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).to.equal(2);
      expect(run.stderr, args.join(' ')).to.contain(message);
    }
  });

  async function pageAs(proxy: string): Promise<{ status: number; location: string | null; body: string }> {
    const port = await freePort();
    const child = spawnCli(
      ['serve', '--port', String(port), '--trusted-proxy', proxy, '--identity-header', 'X-Forwarded-Email'],
      env(),
    );
    try {
      await new Promise<void>((resolve, reject) => {
        let seen = '';
        child.process.stdout?.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes('review page: http')) resolve();
        });
        child.done.then((run) => reject(new Error(`serve exited ${run.code}: ${run.stderr}`)), reject);
      });
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        headers: { 'x-forwarded-email': 'pat@example.com' },
        redirect: 'manual',
      });
      return {
        status: response.status,
        location: response.headers.get('location'),
        body: await response.text(),
      };
    } finally {
      child.process.kill('SIGTERM');
      await child.done.catch(() => undefined);
    }
  }

  it('from a trusted proxy address the header signs the person in; from any other peer it is ignored', async () => {
    const trusted = await pageAs('127.0.0.1');
    expect(trusted.status).to.equal(200);
    expect(trusted.body).to.contain('<strong class="who">pat@example.com</strong>');
    const elsewhere = await pageAs('10.9.9.9');
    expect(elsewhere.status).to.equal(303);
    expect(elsewhere.location).to.match(/^\/login/);
  });
});
