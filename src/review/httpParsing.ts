/**
 * The two small parsers the review server needs, written here instead of depending on `@fastify/cookie`
 * (whose current release pulls `cookie@2`, which requires Node 22) and `@fastify/formbody`; plus `formOf`,
 * which hands a route the form the parser produced.
 */
import type { FastifyRequest } from 'fastify';

/** Cookies of a `Cookie` header; the first occurrence of a name wins, undecodable values are skipped. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (cookies.has(name)) continue;
    try {
      cookies.set(name, decodeURIComponent(value));
    } catch {
      // a malformed escape: not one of ours
    }
  }
  return cookies;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  secure: boolean;
}

/** A `Set-Cookie` value for a session cookie: HttpOnly, SameSite=Strict, Path=/, Secure on https only. */
export function serializeSessionCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [
    `${name}=${encodeURIComponent(value)}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Strict',
  ];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

/** A form field: one value, several (repeated checkboxes), or absent. */
type FormValue = string | string[] | undefined;
export type FormBody = Record<string, FormValue>;

/** `application/x-www-form-urlencoded` into an object; repeated names become arrays. */
export function parseForm(body: string): FormBody {
  const form: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of new URLSearchParams(body)) {
    const existing = form[name];
    if (existing === undefined) form[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else form[name] = [existing, value];
  }
  return form;
}

/** The single value of a field (the first when repeated), or ''. */
export function field(form: FormBody | undefined, name: string): string {
  const value = form?.[name];
  if (Array.isArray(value)) return value[0] ?? '';
  return value ?? '';
}

/** Every value of a field, comma-separated values split, blanks dropped. */
export function fieldList(form: FormBody | undefined, name: string): string[] {
  const value = form?.[name];
  const values = value === undefined ? [] : Array.isArray(value) ? value : [value];
  return values
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
}

/** The form a request carried (parsed by {@link parseForm}), or an empty one when it carried none. */
export function formOf(request: FastifyRequest): FormBody {
  const body = request.body;
  return typeof body === 'object' && body !== null ? (body as FormBody) : {};
}
