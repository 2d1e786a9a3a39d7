import type { IncomingMessage, ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import { expect } from 'chai';
import type { ApiSourceConfig } from '../../src/reports/apiSourceConfig.js';
import { PartnerApiError } from '../../src/reports/errors/PartnerApiError.js';
import { readApiReport } from '../../src/reports/readApiReport.js';
import { type LoopbackServer, listenOnLoopback } from '../support/loopbackServer.js';

const USER = 'recon-bot';
/** 32 characters, the length of a Twilio auth token. */
const PASSWORD = 'pw5b1e0c9d8a7f6e5d4c3b2a19f8e7d6';

/** A partner that answers every request with `answer(request)`. */
function startEchoing(
  answer: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<LoopbackServer> {
  return listenOnLoopback(answer);
}

function source(baseUrl: string, extra: Partial<ApiSourceConfig> = {}): ApiSourceConfig {
  return {
    type: 'api',
    baseUrl,
    path: '/v1/settlements',
    fields: { reference: 'reference', partnerReference: 'id', executedAt: 'executed_at' },
    timeoutMs: 2_000,
    retries: 0,
    ...extra,
  };
}

async function readFailure(config: ApiSourceConfig, env: NodeJS.ProcessEnv = {}): Promise<PartnerApiError> {
  try {
    for await (const _ of readApiReport(config, { partner: 'echo', timezone: 'UTC', env })) {
      // drained
    }
  } catch (error) {
    expect(error).to.be.instanceOf(PartnerApiError);
    return error as PartnerApiError;
  }
  throw new Error('expected a PartnerApiError');
}

function expectNothingOf(secret: string, error: PartnerApiError): void {
  for (const text of [
    error.message,
    JSON.stringify(error),
    inspect(error, { depth: 10, showHidden: true }),
  ]) {
    expect(text).not.to.contain(secret);
  }
}

describe('readApiReport: credentials a partner echoes back stay out of errors', () => {
  it('user and password given in baseUrl are redacted like configured Basic credentials', async () => {
    // A gateway's 400 that quotes the request's Authorization header, as some debugging proxies do.
    const partner = await startEchoing((request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `bad header: ${request.headers.authorization}` }));
    });
    try {
      const withUserinfo = partner.url.replace('http://', `http://${USER}:${PASSWORD}@`);
      const error = await readFailure(source(withUserinfo));
      expect(error.message).to.contain('answered HTTP 400');
      const basic = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
      expectNothingOf(basic, error);
      expectNothingOf(PASSWORD, error);
    } finally {
      await partner.close();
    }
  });

  it('a Basic token echoed in JSON that escapes "/" (PHP json_encode does by default) is still redacted', async () => {
    // base64 of user:password holds a "/" for this user name: written "\/" in the body, the literal
    // token is no longer there to redact, and one backslash less gives it back.
    const user = 'recon?bot';
    const basic = Buffer.from(`${user}:${PASSWORD}`).toString('base64');
    expect(basic).to.contain('/');
    const partner = await startEchoing((request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: `bad header: ${request.headers.authorization}` }).replaceAll('/', '\\/'),
      );
    });
    try {
      const config = source(partner.url, {
        auth: { basic: { usernameEnv: 'ECHO_USER', passwordEnv: 'ECHO_PASSWORD' } },
      });
      const error = await readFailure(config, { ECHO_USER: user, ECHO_PASSWORD: PASSWORD });
      expect(error.message).to.contain('answered HTTP 400');
      expect(error.message.replaceAll('\\', '')).not.to.contain(basic);
    } finally {
      await partner.close();
    }
  });

  it('a password that the 200-character cut of a non-JSON body splits is not quoted in part', async () => {
    // A maintenance page that echoes the password after some padding: the quote is cut at 200 characters
    // before redaction, so the redaction no longer finds the whole password and its first part is quoted.
    const partner = await startEchoing((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`${' '.repeat(185)}pw=${PASSWORD} (your request)`);
    });
    try {
      const config = source(partner.url, {
        auth: { basic: { usernameEnv: 'ECHO_USER', passwordEnv: 'ECHO_PASSWORD' } },
      });
      const error = await readFailure(config, { ECHO_USER: USER, ECHO_PASSWORD: PASSWORD });
      expect(error.code).to.equal('bad_body');
      expectNothingOf(PASSWORD.slice(0, 12), error);
    } finally {
      await partner.close();
    }
  });
});
