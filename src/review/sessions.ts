import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Flash } from './layout.js';
import type { Person } from './person.js';

/** A signed-in person. Lives only in this process's memory: a restart signs everyone out. */
export interface ReviewSession {
  readonly id: string;
  /** Sent back in every form as `_csrf`; compared in constant time. */
  readonly csrf: string;
  /** Idle expiry: pushed forward on every use, up to `endsAt`. */
  expiresAt: number;
  /** Absolute end: when the session ends however busy it is (signing in again starts a new one). */
  readonly endsAt: number;
  /** Who signed in: what the history records for their decisions. */
  readonly person: Person;
  /** A message for the next page, shown once. */
  flash: Flash | null;
}

/**
 * Session ids (32 random bytes) mapped to their expiry. Expiry slides on use up to `ttlMs` of inactivity,
 * and a session ends `maxLifetimeMs` after sign-in whatever its use (a stolen cookie, or a session kept
 * busy by an open tab, does not live forever); at most `maxSessions` live at once (the oldest is
 * dropped), so a flood of logins cannot grow memory.
 */
export class SessionStore {
  private readonly sessions = new Map<string, ReviewSession>();

  constructor(
    readonly ttlMs: number = 8 * 60 * 60 * 1000,
    private readonly maxSessions = 10_000,
    private readonly now: () => number = Date.now,
    readonly maxLifetimeMs: number = 12 * 60 * 60 * 1000,
  ) {}

  create(person: Person): ReviewSession {
    this.prune();
    while (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const session: ReviewSession = {
      id: randomToken(),
      csrf: randomToken(),
      expiresAt: this.now() + Math.min(this.ttlMs, this.maxLifetimeMs),
      endsAt: this.now() + this.maxLifetimeMs,
      person,
      flash: null,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session for `id`, its expiry pushed forward; undefined when unknown or expired. */
  get(id: string | undefined): ReviewSession | undefined {
    if (!id) return undefined;
    const session = this.sessions.get(id);
    if (!session) return undefined;
    if (session.expiresAt <= this.now() || session.endsAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    session.expiresAt = Math.min(this.now() + this.ttlMs, session.endsAt);
    // Map order is insertion order: re-insert so the least recently used session is dropped first.
    this.sessions.delete(id);
    this.sessions.set(id, session);
    return session;
  }

  delete(id: string): void {
    this.sessions.delete(id);
  }

  /** Ends every session of `name` (a revoked person). */
  deleteAllOf(name: string): void {
    for (const [id, session] of this.sessions) if (session.person.name === name) this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [id, session] of this.sessions)
      if (session.expiresAt <= now || session.endsAt <= now) this.sessions.delete(id);
  }
}

/** 32 random bytes, base64url. */
function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Whether `given` equals `expected`, in time independent of where they differ and of `given`'s length
 * (both are hashed to 32 bytes first, as `timingSafeEqual` needs equal lengths).
 */
export function secretsMatch(expected: string, given: string | undefined | null): boolean {
  if (typeof given !== 'string' || given.length === 0 || expected.length === 0) return false;
  const a = createHash('sha256').update(expected, 'utf8').digest();
  const b = createHash('sha256').update(given, 'utf8').digest();
  return timingSafeEqual(a, b);
}
