/**
 * The review site's people (table `review_users`, migration 0009): who they are, what their role lets
 * them do, and their personal tokens, kept only as salted scrypt hashes.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../database/queryable.js';
import { ReviewUserError } from './errors/ReviewUserError.js';

/** `viewer` reads and exports; `resolver` also acknowledges, assigns, resolves and dismisses; `admin` also manages people. */
export const REVIEW_ROLES = ['viewer', 'resolver', 'admin'] as const;
export type ReviewRole = (typeof REVIEW_ROLES)[number];

function isReviewRole(value: unknown): value is ReviewRole {
  return typeof value === 'string' && (REVIEW_ROLES as readonly string[]).includes(value);
}

/** Whether `role` may change discrepancies (acknowledge, assign, resolve, dismiss). */
export function mayDecide(role: ReviewRole): boolean {
  return role === 'resolver' || role === 'admin';
}

export interface ReviewUser {
  name: string;
  role: ReviewRole;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Names as the history shows them: letters, digits and `._@+-`, starting with a letter or digit; e.g. an email. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$/;

/** Personal tokens look like `ilr_<token id>.<secret>`; the id finds the row, the secret is hashed. */
const TOKEN = /^ilr_([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;

/**
 * scrypt's cost: N = 2^14, r = 8 (16 MiB and some 40 ms a hash on a 2-core test machine), the parameters
 * RFC 7914 suggests for interactive logins: a stolen table is slow to attack while a sign-in or an API call
 * with a personal token stays quick. The tokens are 256 random bits anyway: the hash guards the table, not
 * weak secrets.
 */
const SCRYPT = { N: 2 ** 14, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const HASH_BYTES = 32;

function hashSecret(secret: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, HASH_BYTES, SCRYPT, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/**
 * Adds a person with a new personal token and returns the token: the only time it exists in clear (only
 * its salted hash is stored). Throws ReviewUserError for a bad name or role, or a name already taken.
 */
export async function addReviewUser(db: Queryable, name: string, role: string): Promise<string> {
  if (!NAME.test(name))
    throw new ReviewUserError(
      'BAD_USER_NAME',
      `"${name.slice(0, 100)}" is not a usable name: use letters, digits and . _ @ + - (an email works), at most 100`,
    );
  if (!isReviewRole(role))
    throw new ReviewUserError('BAD_ROLE', `the role must be one of ${REVIEW_ROLES.join(', ')}`);
  const tokenId = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const salt = randomBytes(16);
  const hash = await hashSecret(secret, salt);
  const inserted = await db.query(
    `INSERT INTO review_users (name, role, token_id, token_salt, token_hash) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (name) DO NOTHING RETURNING name`,
    [name, role, tokenId, salt, hash],
  );
  if (inserted.rows.length === 0)
    throw new ReviewUserError(
      'USER_EXISTS',
      `${name} already exists; revoke them first, or choose another name (a revoked name stays taken: the history names them)`,
    );
  return `ilr_${tokenId}.${secret}`;
}

/** Everyone, revoked people too, by name. */
export async function listReviewUsers(db: Queryable): Promise<ReviewUser[]> {
  const result = await db.query<{
    name: string;
    role: ReviewRole;
    created_at: Date;
    revoked_at: Date | null;
  }>('SELECT name, role, created_at, revoked_at FROM review_users ORDER BY name');
  return result.rows.map((r) => ({
    name: r.name,
    role: r.role,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}

/** Revokes a person's token at once (their sessions end at their next request); false when already revoked. */
export async function revokeReviewUser(db: Queryable, name: string): Promise<boolean> {
  const result = await db.query<{ was: Date | null }>(
    `UPDATE review_users u SET revoked_at = coalesce(u.revoked_at, now())
       FROM (SELECT name, revoked_at AS was FROM review_users WHERE name = $1 FOR UPDATE) old
      WHERE u.name = old.name RETURNING old.was`,
    [name],
  );
  if (result.rows.length === 0)
    throw new ReviewUserError('USER_NOT_FOUND', `there is no review user ${name}`);
  return result.rows[0].was === null;
}

/** The person a personal token belongs to, unless revoked; null for anything else. Costs one scrypt hash. */
export async function personOfToken(
  db: Queryable,
  token: string,
): Promise<{ name: string; role: ReviewRole } | null> {
  const match = TOKEN.exec(token);
  // Not shaped like a personal token: refused without hashing (the shape is public; a flood of garbage
  // tokens must not buy a flood of scrypt work).
  if (!match) return null;
  const row = (
    await db.query<{ name: string; role: ReviewRole; token_salt: Buffer; token_hash: Buffer }>(
      'SELECT name, role, token_salt, token_hash FROM review_users WHERE token_id = $1 AND revoked_at IS NULL',
      [match[1]],
    )
  ).rows[0];
  // A hash is computed for an unknown id too, so timing does not tell which ids exist.
  const hash = await hashSecret(match[2], row?.token_salt ?? Buffer.alloc(16));
  if (!row || !timingSafeEqual(hash, row.token_hash)) return null;
  return { name: row.name, role: row.role };
}

/** A person's current role, or null once revoked or unknown: checked on every request of their session. */
export async function activeRole(db: Queryable, name: string): Promise<ReviewRole | null> {
  const result = await db.query<{ role: ReviewRole }>(
    'SELECT role FROM review_users WHERE name = $1 AND revoked_at IS NULL',
    [name],
  );
  return result.rows[0]?.role ?? null;
}
