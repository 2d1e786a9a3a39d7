/**
 * Limits guessing the review token: wrong tokens (the sign-in form's and bearer tokens alike) are counted per
 * client address, and an address that reached the limit is refused with 429 for a while, before its token is
 * even looked at. `registerAuth.ts` asks and records; `createReviewServer` makes one throttle per server.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';

export interface SignInThrottleOptions {
  /**
   * Different wrong tokens one address may try within `windowMs`; the next attempt, right token or not, is
   * refused with 429 and `Retry-After` until the oldest of them is `windowMs` old.
   * @default 10
   */
  maxFailures?: number;
  /** How long a wrong token counts against its address. @default 15 minutes */
  windowMs?: number;
  /**
   * Addresses remembered at once; past this the one whose last wrong token is oldest is forgotten, so a flood
   * from many addresses cannot grow memory (at most `maxAddresses * maxFailures` remembered failures).
   * @default 10000
   */
  maxAddresses?: number;
}

const SIGN_IN_THROTTLE_DEFAULTS: Readonly<Required<SignInThrottleOptions>> = {
  maxFailures: 10,
  windowMs: 15 * 60 * 1000,
  maxAddresses: 10_000,
};

interface AddressFailures {
  /** Digest of each different wrong token -> when it was first tried; oldest first (insertion order). */
  readonly failures: Map<string, number>;
  /** When the newest of them was tried. */
  last: number;
}

/**
 * Wrong tokens per address in a sliding window.
 *
 * Why a log of failure times rather than a counter per fixed window: a fixed window lets an address make
 * `2 * maxFailures` guesses in a burst straddling a window boundary; the log guarantees at most `maxFailures`
 * in any `windowMs`, and costs at most `maxFailures` entries per address.
 *
 * Only different wrong tokens count. Repeating a guess already refused tells the guesser nothing, while
 * counting it would let one script with a stale token (retrying every minute) lock out every person behind
 * the same address; the same idea as Azure AD's smart lockout. Guesses are remembered as HMACs under a key
 * that lives only in this object, never as text.
 *
 * A right token does not wipe its address's failures: someone guessing from behind the same NAT as a reviewer
 * would otherwise get a fresh allowance each time the reviewer signs in. Failures simply age out.
 *
 * Checking and recording are synchronous, and every caller compares the token between the two in the same
 * tick, so concurrent requests cannot all slip past the check before the first failure is recorded.
 */
export class SignInThrottle {
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly maxAddresses: number;
  /** Ordered by each address's newest failure, oldest first: expired addresses are always at the front. */
  private readonly addresses = new Map<string, AddressFailures>();
  private readonly key = randomBytes(32);

  constructor(
    options: SignInThrottleOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxFailures = wholeNumber(
      'maxFailures',
      options.maxFailures ?? SIGN_IN_THROTTLE_DEFAULTS.maxFailures,
    );
    this.windowMs = wholeNumber('windowMs', options.windowMs ?? SIGN_IN_THROTTLE_DEFAULTS.windowMs);
    this.maxAddresses = wholeNumber(
      'maxAddresses',
      options.maxAddresses ?? SIGN_IN_THROTTLE_DEFAULTS.maxAddresses,
    );
  }

  /** Milliseconds until `address` may try a token again; 0 when it may try now. */
  retryAfterMs(address: string): number {
    const entry = this.addresses.get(address);
    if (!entry) return 0;
    const now = this.now();
    this.expire(entry, now);
    if (entry.failures.size === 0) {
      this.addresses.delete(address);
      return 0;
    }
    return this.lockedFor(entry, now);
  }

  /**
   * Records that `address` tried the wrong token `guess`. Returns how long the address is now refused
   * (0 while it is under the limit) and whether this failure counted (false for a guess it already tried).
   */
  recordFailure(address: string, guess: string): { counted: boolean; retryAfterMs: number } {
    const now = this.now();
    this.evictExpired(now);
    let entry = this.addresses.get(address);
    if (entry) this.expire(entry, now);
    else entry = { failures: new Map(), last: now };
    const digest = createHmac('sha256', this.key).update(guess, 'utf8').digest('base64url').slice(0, 22);
    // Once at the limit nothing more is added: callers refuse before comparing, so this only bounds memory.
    const counted = !entry.failures.has(digest) && entry.failures.size < this.maxFailures;
    if (counted) {
      entry.failures.set(digest, now);
      entry.last = now;
      // Move to the back: the table stays ordered by newest failure.
      this.addresses.delete(address);
      this.addresses.set(address, entry);
      while (this.addresses.size > this.maxAddresses) {
        const oldest = this.addresses.keys().next().value;
        if (oldest === undefined) break;
        this.addresses.delete(oldest);
      }
    }
    return { counted, retryAfterMs: this.lockedFor(entry, now) };
  }

  /** Addresses remembered now (expired ones included until the next recorded failure sweeps them). */
  get size(): number {
    return this.addresses.size;
  }

  private lockedFor(entry: AddressFailures, now: number): number {
    if (entry.failures.size < this.maxFailures) return 0;
    const oldest = entry.failures.values().next().value ?? now;
    return Math.max(1, oldest + this.windowMs - now);
  }

  private expire(entry: AddressFailures, now: number): void {
    for (const [digest, at] of entry.failures) {
      if (at + this.windowMs > now) break;
      entry.failures.delete(digest);
    }
  }

  /** Forgets addresses whose newest failure is out of the window; stops at the first live one. */
  private evictExpired(now: number): void {
    for (const [address, entry] of this.addresses) {
      if (entry.last + this.windowMs > now) break;
      this.addresses.delete(address);
    }
  }
}

function wholeNumber(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`signInThrottle.${name} must be a whole number of at least 1 (got ${value})`);
  return value;
}

/**
 * The address a request's failures count against.
 *
 * Without `trustProxy` it is the connection's address. Behind a proxy (`trustProxy`), fastify's `request.ip`
 * is the leftmost `X-Forwarded-For` entry, which the client writes itself whenever the proxy appends to the
 * header (nginx's usual `$proxy_add_x_forwarded_for`): a guesser could pick a fresh one per attempt. So the
 * throttle takes the rightmost entry instead, the one our proxy added. Behind a chain of proxies that is the
 * next proxy out, which throttles everyone behind it together: too strict, never too lenient.
 */
export function clientAddressOf(request: FastifyRequest, trustProxy: boolean | string[]): string {
  // With trustProxy, `ips` is [socket address, rightmost X-Forwarded-For entry, ..., leftmost]. With a list
  // of proxy addresses, fastify's `ip` already is the first address not in the list.
  const ips = trustProxy === true ? request.ips : undefined;
  return throttleKey(ips && ips.length > 1 ? ips[1] : request.ip);
}

/**
 * An address as the throttle counts it: IPv4 as is (also when written IPv4-mapped, `::ffff:192.0.2.1`),
 * IPv6 by its /64 prefix, since one subscriber usually holds a whole /64 and could otherwise try
 * `maxFailures` tokens from each of 2^64 addresses. Anything else (not an IP address) as is.
 */
export function throttleKey(address: string): string {
  const groups = ipv6Groups(address);
  if (!groups) return address;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff)
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (zone id dropped, `::` and a dotted IPv4 tail expanded). */
function ipv6Groups(address: string): number[] | undefined {
  const zone = address.indexOf('%');
  const text = (zone >= 0 ? address.slice(0, zone) : address).toLowerCase();
  if (!isIPv6(text)) return undefined;
  const side = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [Number.parseInt(group, 16)];
          const [a, b, c, d] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head, tail] = text.split('::');
  const left = side(head);
  const right = tail === undefined ? [] : side(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
