import type { ResolvedApiSourceConfig } from './apiSourceConfig.js';
import { PartnerApiError } from './errors/PartnerApiError.js';

/**
 * The headers every request to the partner sends, its credentials included (read from `env` here, once),
 * and the secrets among them that no message may quote. `config` must have passed apiSourceConfigProblems
 * (createPartnerClient checks it first): its baseUrl is an absolute http(s) URL.
 */
export function requestHeaders(
  config: ResolvedApiSourceConfig,
  env: NodeJS.ProcessEnv,
  /** What the client's other errors carry: the partner, their message prefix and the listing's address. */
  context: { partner: string; prefix: string; base: string },
): { headers: Record<string, string>; secrets: string[] } {
  const { partner, prefix, base } = context;
  const parsedBase = new URL(config.baseUrl);

  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'intent-ledger' };
  const secrets: string[] = [];
  const readEnv = (name: string, what: string): string => {
    const value = env[name];
    if (value === undefined || value === '') {
      throw new PartnerApiError(
        `${prefix} the environment variable ${name} that should hold the ${what} is ` +
          `${value === undefined ? 'not set' : 'empty'}: set it before reading this partner`,
        { code: 'auth_missing', partner, url: base, attempts: 0 },
      );
    }
    return value;
  };
  if (config.auth?.type === 'bearer') {
    const token = readEnv(config.auth.env, 'API token');
    secrets.push(token);
    headers[config.auth.header] = config.auth.scheme === '' ? token : `${config.auth.scheme} ${token}`;
  } else if (config.auth?.type === 'basic') {
    // RFC 7617: user-id and password joined by a colon, base64 of their UTF-8 bytes.
    const user = readEnv(config.auth.usernameEnv, 'API user name');
    const password = readEnv(config.auth.passwordEnv, 'API password');
    const token = Buffer.from(`${user}:${password}`, 'utf8').toString('base64');
    secrets.push(password, token);
    headers.Authorization = `Basic ${token}`;
  }
  // Credentials in baseUrl (`https://user:pass@host`) are HTTP Basic auth: sent as their header, never in
  // the address, which ends up in the run's source, logs and errors (all of them strip it anyway).
  if (parsedBase.username || parsedBase.password) {
    if (
      config.auth &&
      (config.auth.type === 'basic' || config.auth.header.toLowerCase() === 'authorization')
    ) {
      throw new PartnerApiError(
        `${prefix} baseUrl carries a user and password and auth sends a token in the Authorization ` +
          'header too: keep one of them (or send the token in another header with auth.header)',
        { code: 'config', partner, url: base, attempts: 0 },
      );
    }
    const password = decodeURIComponent(parsedBase.password);
    const basic = `${decodeURIComponent(parsedBase.username)}:${password}`;
    const token = Buffer.from(basic).toString('base64');
    // Secrets like configured Basic credentials: a partner echoing the header, or the password in a redirect
    // (shorter than redirectTarget's 16 characters), must not put them in an error. The password as
    // written in baseUrl too, should its percent-encoding differ from encodeURIComponent's.
    secrets.push(token, ...[password, parsedBase.password].filter((form) => form !== ''));
    headers.Authorization = `Basic ${token}`;
  }
  return { headers, secrets };
}
