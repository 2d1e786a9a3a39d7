import type { IncomingMessage, ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import { expect } from 'chai';
import type { ApiSourceConfig } from '../../src/reports/apiSourceConfig.js';
import { PartnerApiError } from '../../src/reports/errors/PartnerApiError.js';
import { readApiReport } from '../../src/reports/readApiReport.js';
import { type LoopbackServer, listenOnLoopback } from '../support/loopbackServer.js';

function startAnswering(
  answer: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<LoopbackServer> {
  return listenOnLoopback(answer);
}

function source(baseUrl: string, extra: Partial<ApiSourceConfig> = {}): ApiSourceConfig {
  return {
    type: 'api',
    baseUrl,
    path: '/v1/settlements',
    fields: { reference: 'reference', partnerReference: 'id' },
    retries: 0,
    ...extra,
  };
}

async function readFailure(config: ApiSourceConfig, env: NodeJS.ProcessEnv = {}): Promise<PartnerApiError> {
  const error = await (async () => {
    for await (const _ of readApiReport(config, { partner: 'p', timezone: 'UTC', env })) {
      // drained
    }
  })().catch((caught: unknown) => caught);
  expect(error).to.be.instanceOf(PartnerApiError);
  return error as PartnerApiError;
}

const texts = (error: PartnerApiError) => [
  error.message,
  JSON.stringify(error),
  inspect(error, { depth: 10, showHidden: true }),
];

describe('reports: our secrets stay out of errors in the forms a partner echoes them in', () => {
  it("baseUrl's password, shorter than a redirect's 16-character rule, is redacted from the redirect's path", async () => {
    const password = 'hunter2pw';
    const partner = await startAnswering((_request, response) => {
      response.writeHead(302, { location: `/login/${password}/retry` });
      response.end();
    });
    try {
      const error = await readFailure(source(partner.url.replace('http://', `http://bot:${password}@`)));
      expect(error.message).to.contain('a redirect to /login/[redacted]/retry');
      for (const text of texts(error)) expect(text).not.to.contain(password);
    } finally {
      await partner.close();
    }
  });

  it('a password percent-encoded in a redirect, or \\u-escaped in a JSON body, is redacted', async () => {
    // Short enough that its encoded form (p%C3%A4%2F42x) is no 16-character path segment either.
    const password = 'pä/42x';
    const env = { U: 'bot', P: password };
    const auth = { basic: { usernameEnv: 'U', passwordEnv: 'P' } };
    const redirecting = await startAnswering((_request, response) => {
      response.writeHead(302, { location: `/login/${encodeURIComponent(password)}` });
      response.end();
    });
    const escaping = await startAnswering((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      // PHP's json_encode default: "\/" for "/" and "\u00e4" for "ä".
      const escaped = JSON.stringify({ error: `wrong password ${password}` })
        .replaceAll('/', '\\/')
        .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      response.end(escaped);
    });
    try {
      const redirect = await readFailure(source(redirecting.url, { auth }), env);
      expect(redirect.message).to.contain('a redirect to /login/[redacted]');
      const echoed = await readFailure(source(escaping.url, { auth }), env);
      expect(echoed.message).to.contain('answered HTTP 400').and.contain('wrong password [redacted]');
      for (const text of [...texts(redirect), ...texts(echoed)]) {
        expect(text).not.to.contain(encodeURIComponent(password));
        expect(text).not.to.contain('p\\\\u00e4\\\\/42x');
      }
    } finally {
      await redirecting.close();
      await escaping.close();
    }
  });
});
