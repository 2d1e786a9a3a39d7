import { performance } from 'node:perf_hooks';
import { LeaseEndingError } from '../shared/errors/LeaseEndingError.js';

/** The longest delay setTimeout accepts (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The lease of one claimed attempt as this process keeps it: it fires (aborts the call's signal and tells
 * run()) before the lease ends in the database (invariant 3), unless the attempt is settled first.
 *
 * The AbortSignal handed to the partner call is made on first read. An AbortController, its EventTarget
 * and a listener cost more than the rest of a run()'s bookkeeping (docs/PERFORMANCE.md), and a call that
 * never reads `signal` has no use for one; one made after the lease fired is aborted at once.
 */
export class AttemptLease {
  /** Neighbours in {@link LeaseTimers}' queue, ordered by `fireAt`. */
  previous: AttemptLease | undefined;
  next: AttemptLease | undefined;
  private controller: AbortController | undefined;
  private listener: (() => void) | undefined;
  private fired = false;

  constructor(
    readonly intentId: string,
    readonly attempt: number,
    /** When to fire, on {@link LeaseTimers.now}'s clock, before the lease ends in the database. */
    readonly fireAt: number,
    /** The intent's partner and key, for the errors of a two-phase caller that names only the id. */
    readonly intent: { partner: string; key: string },
  ) {}

  /** Aborts before the lease ends. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.fired) this.controller.abort(this.reason());
    }
    return this.controller.signal;
  }

  /** Runs `listener` once when the lease fires (at once if it has). One listener: run()'s race. */
  whenEnding(listener: () => void): void {
    if (this.fired) listener();
    else this.listener = listener;
  }

  /** @internal called by {@link LeaseTimers} */
  fire(): void {
    this.fired = true;
    this.controller?.abort(this.reason());
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  /** @internal called by {@link LeaseTimers} when the attempt is settled */
  forgetListener(): void {
    this.listener = undefined;
  }

  private reason(): LeaseEndingError {
    return new LeaseEndingError(this.intentId, this.attempt);
  }
}

/**
 * The leases this process holds: a queue ordered by when each must fire, behind ONE unref'd timer set for
 * the earliest. A setTimeout + clearTimeout per call cost about as much as the rest of the lease bookkeeping
 * (docs/PERFORMANCE.md, "The ledger's hot path"); here arming is a Map entry and a link at the queue's
 * tail (every lease of a ledger has the same length, so a new one almost always fires last), and settling
 * unlinks it without touching the timer. A timer that wakes for a lease already settled finds nothing due
 * and is set for the new earliest.
 * Leases are also found by (intent, attempt): the two-phase API settles an attempt by its id and number.
 *
 * Deadlines are on a monotonic clock ({@link LeaseTimers.now}), never the wall clock: a wall clock stepped
 * back (NTP, a resumed VM) would otherwise find nothing due when the timer wakes and let a call outlive its
 * lease, which the previous timer per lease, counting down a delay, never did.
 */
export class LeaseTimers {
  /** The clock of every deadline: milliseconds, monotonic. */
  static now(): number {
    return performance.now();
  }

  private readonly leases = new Map<string, AttemptLease>();
  private first: AttemptLease | undefined;
  private last: AttemptLease | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  /**
   * Starts the lease of (`intentId`, `attempt`); it fires at `fireAt` ({@link LeaseTimers.now}'s clock) unless
   * disarmed first. Arming the same pair again (an id reused after the intents were truncated) finds the new
   * lease from then on; the older one still fires at its time.
   */
  arm(
    intentId: string,
    attempt: number,
    fireAt: number,
    intent: { partner: string; key: string },
  ): AttemptLease {
    const lease = new AttemptLease(intentId, attempt, fireAt, intent);
    this.leases.set(leaseKey(intentId, attempt), lease);
    this.insert(lease);
    if (fireAt < this.timerAt) this.schedule(fireAt);
    return lease;
  }

  /** The lease of (`intentId`, `attempt`) while it is armed; `undefined` once settled or fired. */
  find(intentId: string, attempt: number): AttemptLease | undefined {
    return this.leases.get(leaseKey(intentId, attempt));
  }

  /** Settles the lease of (`intentId`, `attempt`): it will not fire. A no-op if it fired or is unknown. */
  disarm(intentId: string, attempt: number): void {
    const key = leaseKey(intentId, attempt);
    const lease = this.leases.get(key);
    if (lease === undefined) return;
    this.leases.delete(key);
    this.unlink(lease);
    lease.forgetListener();
  }

  /** Walks back from the tail to keep the queue ordered; a lease claimed late but sent early goes before. */
  private insert(lease: AttemptLease): void {
    let before = this.last;
    while (before !== undefined && before.fireAt > lease.fireAt) before = before.previous;
    lease.previous = before;
    lease.next = before === undefined ? this.first : before.next;
    if (lease.next === undefined) this.last = lease;
    else lease.next.previous = lease;
    if (before === undefined) this.first = lease;
    else before.next = lease;
  }

  private unlink(lease: AttemptLease): void {
    if (lease.previous === undefined) this.first = lease.next;
    else lease.previous.next = lease.next;
    if (lease.next === undefined) this.last = lease.previous;
    else lease.next.previous = lease.previous;
    lease.previous = undefined;
    lease.next = undefined;
  }

  private schedule(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => this.fireDue(),
      // Clamped to what setTimeout can count: beyond it Node fires after 1 ms. A wake before anything is due
      // simply sets the timer again.
      Math.min(MAX_TIMER_MS, Math.max(0, at - LeaseTimers.now())),
    );
    // Calls still in flight never hold the process open.
    this.timer.unref();
  }

  private fireDue(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = LeaseTimers.now();
    while (this.first !== undefined && this.first.fireAt <= now) {
      const lease = this.first;
      this.unlink(lease);
      const key = leaseKey(lease.intentId, lease.attempt);
      if (this.leases.get(key) === lease) this.leases.delete(key);
      lease.fire();
    }
    if (this.first !== undefined) this.schedule(this.first.fireAt);
  }
}

function leaseKey(intentId: string, attempt: number): string {
  return `${intentId}:${attempt}`;
}
