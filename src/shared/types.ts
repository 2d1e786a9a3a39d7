import type { RejectionReason } from './errors/IntentRejectedError.js';
import type { IntentStatus } from './status.js';

/** JSON the ledger stores for a caller (partner responses). Kept small: it is replayed on every duplicate. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** What a caller wants done, once. */
export interface IntentSpec {
  /** The partner system, e.g. `'acme-pay'`. */
  partner: string;
  /** What we ask of it, e.g. `'charge'`. */
  operation: string;
  /** Stable across redeliveries of the same logical message: a message id or `order-123:charge`. Never a delivery tag. */
  key: string;
  /** The request. Only its sha256 fingerprint is stored (payloads may hold personal data). */
  payload: unknown;
  /** Our identifier the partner echoes in its reports; the reconciler matches on it. */
  reference?: string;
  /** Decimal string, e.g. `'1234.50'`. Never a JS number. */
  amount?: string;
  /** ISO 4217 code, e.g. `'BRL'`. */
  currency?: string;
  /**
   * The partner deduplicates by the key we pass it (send `key` as its idempotency key). Only then may an
   * attempt whose outcome is unknown be retried, with the same key.
   * @default false
   */
  partnerHonoursKey?: boolean;
}

/** Handed to the partner callback. */
export interface CallContext {
  intentId: string;
  key: string;
  /** Attempt number; also the fencing token of this attempt. */
  attempt: number;
  /** Aborts before the lease ends. Pass it to axios/fetch: a call must never outlive its lease. */
  signal: AbortSignal;
}

/** What the partner callback returns on success. */
export interface CallResult {
  /** The partner's own id for the execution (NSU, transaction id). */
  partnerReference?: string;
  /** What to replay to duplicates (stored as JSON). */
  response?: Json;
}

/** The partner callback: makes the call exactly as it would without the ledger. */
export type PartnerCall = (context: CallContext) => Promise<CallResult>;

/** Result of `run()`: the partner executed this intent, now or before. */
export interface RunResult {
  intentId: string;
  status: 'completed';
  /** True when the stored result of an earlier call was returned and the partner was not called. */
  replayed: boolean;
  attempt: number;
  partnerReference: string | null;
  response: Json | null;
}

/** `begin()` won the claim: call the partner, then report with `complete`/`reject`/`notExecuted`/`unknown`. */
export interface Claim {
  kind: 'claimed';
  intentId: string;
  key: string;
  attempt: number;
  leaseExpiresAt: Date;
  /** Fires before the lease ends. */
  signal: AbortSignal;
}

/** `begin()` found the intent already completed: nothing to call. */
export interface Replay {
  kind: 'replay';
  result: RunResult;
}

/** One try at the call. */
export interface Attempt {
  attempt: number;
  owner: string | null;
  startedAt: Date;
  leaseExpiresAt: Date;
  endedAt: Date | null;
  /** What the caller reported; null while running or when the worker died. */
  outcome: 'completed' | 'rejected' | 'not_executed' | 'unknown' | null;
  partnerReference: string | null;
  response: Json | null;
  error: Json | null;
  /** What the reconciler decided for this attempt, when it had to. */
  resolution: 'completed' | 'not_executed' | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
}

/** An intent as recorded, with its history. */
export interface Intent {
  id: string;
  partner: string;
  operation: string;
  key: string;
  fingerprint: string;
  reference: string | null;
  amount: string | null;
  currency: string | null;
  status: IntentStatus;
  attempt: number;
  leaseExpiresAt: Date | null;
  owner: string | null;
  partnerHonoursKey: boolean;
  partnerReference: string | null;
  response: Json | null;
  reason: RejectionReason | { detail: string } | null;
  resolvedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  settledAt: Date | null;
  attempts: Attempt[];
}
