import type { Pool } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { errorSummary, isConnectionError } from '../database/databaseErrors.js';
import { IdempotencyKeyConflictError } from '../shared/errors/IdempotencyKeyConflictError.js';
import { IntentNotExecutedError } from '../shared/errors/IntentNotExecutedError.js';
import { IntentOutcomeUnknownError } from '../shared/errors/IntentOutcomeUnknownError.js';
import { IntentRejectedError, type RejectionReason } from '../shared/errors/IntentRejectedError.js';
import { LedgerClosedError } from '../shared/errors/LedgerClosedError.js';
import type { Logger } from '../shared/logger.js';
import { IntentStatus } from '../shared/status.js';
import type {
  CallResult,
  Claim,
  Intent,
  IntentSpec,
  Json,
  PartnerCall,
  Replay,
  RunResult,
} from '../shared/types.js';
import { callWithinLease } from './callWithinLease.js';
import { ClaimOrder } from './claimOrder.js';
import type { Classification } from './classify.js';
import { intentFingerprint } from './fingerprint.js';
import { type InboxResult, runInInbox } from './inbox.js';
import { raiseLateCompletion } from './lateCompletion.js';
import { type AttemptLease, LeaseTimers } from './leaseTimers.js';
import { LedgerMetrics } from './metrics.js';
import type { ResolvedLedgerOptions } from './options.js';
import { type PurgeOptions, type PurgeResult, purgeExpired } from './purge.js';
import { replayFinal, replayOrRefuse } from './replayOrRefuse.js';
import {
  type ClaimInput,
  claimNewIntent,
  type ExistingIntentRow,
  type FirstClaimOutcome,
} from './sql/claimIntent.js';
import { type CompletedRow, type CompletionInput, completeAttempt } from './sql/completeAttempt.js';
import { correctNotExecutedIntent } from './sql/correctNotExecutedIntent.js';
import { getIntentById, getIntentWithAttempts } from './sql/getIntentWithAttempts.js';
import { type KeyedIntentRow, readIntentByKey } from './sql/readIntentByKey.js';
import { type ReclaimOutcome, reclaimIntent } from './sql/reclaimIntent.js';
import { type FailedOutcome, settleAttemptWithoutExecution } from './sql/settleAttemptWithoutExecution.js';
import { inDatabase, type StepContext, unavailable } from './unavailable.js';
import { validateSpec } from './validateSpec.js';
import { Workflow } from './workflow.js';

/** How many times `begin` re-reads a row that changed between the claim and the look-up before giving up. */
const MAX_CLAIM_ROUNDS = 5;
/**
 * Backoff (ms) for recording a completion while the database is briefly unreachable (a restart, a
 * failover). The partner already executed: losing the record would turn a success into "unknown", so it
 * is worth a few seconds; past that, the lease and the reconciler take over.
 */
const COMPLETION_RETRY_DELAYS_MS = [100, 250, 500, 1_000, 2_000];

/**
 * The intent ledger. Create it with `createLedger()`; one per process is plenty (it holds a pool).
 * See README.md for the consumer's view and docs/DESIGN.md for the states.
 */
export class Ledger {
  /** Counters to register with Prometheus: `ledger.metrics.registerWith(registry)`. */
  readonly metrics = new LedgerMetrics();
  private readonly log: Logger;
  private readonly leaseTimers = new LeaseTimers();
  private readonly claimOrder: ClaimOrder;
  private readonly lateAnswers = new Set<Promise<void>>();
  private closed = false;

  /** @internal use `createLedger()` */
  constructor(
    /** The TypeORM data source (for transactions that join the ledger's database). */
    readonly dataSource: DataSource,
    /** The ledger's connection pool: pass it to `reconcile({ pool })` or your own queries to share it. */
    readonly pool: Pool,
    private readonly options: ResolvedLedgerOptions,
    private readonly release: () => Promise<void>,
  ) {
    this.log = options.logger;
    this.claimOrder = new ClaimOrder(options.claimOrder);
  }

  /**
   * Calls the partner at most once for (partner, key), however often the same message is delivered.
   * Returns the partner's result, now or replayed; throws a `LedgerError` saying why it did not call.
   */
  async run(spec: IntentSpec, call: PartnerCall): Promise<RunResult> {
    const claimed = await this.claim(spec, 'run');
    if (claimed.kind === 'replay') return claimed.result;
    const { intentId, attempt, lease } = claimed;
    const settled = await callWithinLease(call, intentId, spec.key, attempt, lease);
    if (settled.kind === 'ok') return this.record(spec, intentId, attempt, settled.value);
    if (settled.kind === 'error') {
      return this.fail(spec, intentId, attempt, this.options.classify(settled.error), settled.error);
    }
    // The callback ignored the signal. The lease is about to end: record "unknown" while we still hold it,
    // but keep listening, because a late success is still the truth (invariant 4).
    this.listenForLateAnswer(spec, intentId, attempt, settled.callPromise);
    return this.fail(spec, intentId, attempt, {
      outcome: 'unknown',
      detail: 'the call outlived its lease and was aborted',
    });
  }

  /**
   * Two-phase form for callers that cannot pass a callback. Returns a claim (call the partner now, then
   * report with `complete` / `reject` / `notExecuted` / `unknown`) or a replay of a completed intent.
   */
  async begin(spec: IntentSpec): Promise<Claim | Replay> {
    const claimed = await this.claim(spec, 'begin');
    if (claimed.kind === 'replay') return claimed;
    const { lease } = claimed;
    return {
      kind: 'claimed',
      intentId: claimed.intentId,
      key: spec.key,
      attempt: claimed.attempt,
      leaseExpiresAt: claimed.leaseExpiresAt,
      get signal() {
        return lease.signal;
      },
    };
  }

  /** `begin`, handing back the attempt's lease itself (run() races the call against it). */
  private async claim(spec: IntentSpec, method: string): Promise<LeasedClaim | Replay> {
    this.assertOpen(method, { partner: spec?.partner, key: spec?.key });
    const input = validateSpec(spec, this.options.subMinorUnitPartners);
    const print = intentFingerprint(
      spec.operation,
      spec.payload,
      input.reference,
      input.amount,
      input.currency,
    );
    // A plain read of the key first, when the claim order says so (claimOrder.ts): a duplicate that the key's
    // row alone answers (another payload, a final outcome) is then one prepared SELECT. Anything else goes on
    // to the claim's statements, as without the read: a key the read did not find may be a contender's insert
    // its snapshot cannot see, and an in_progress or unknown row may be settling in a transaction the claim's
    // insert then waits for (test/ledger/claimWaits.test.ts runs under both orders).
    const readFirst = this.claimOrder.readFirst();
    if (readFirst) {
      let row: KeyedIntentRow | undefined;
      try {
        row = await readIntentByKey(this.pool, input.partner, input.key);
      } catch (error) {
        throw unavailable('claiming', spec, error);
      }
      if (row !== undefined && settledForGood(row, print)) {
        this.claimOrder.observe(true);
        return this.answerFromRow(row, spec, print);
      }
      this.claimOrder.observe(false);
    }
    // Spelled out: spreading `input` into a literal was a large share of this method's own CPU
    // (docs/PERFORMANCE.md, "The ledger's hot path").
    const claimInput: ClaimInput = {
      partner: input.partner,
      operation: input.operation,
      key: input.key,
      fingerprint: print,
      reference: input.reference,
      amount: input.amount,
      currency: input.currency,
      leaseMs: this.options.leaseMs,
      owner: this.options.owner,
      partnerHonoursKey: input.partnerHonoursKey,
    };
    const labels = { partner: spec.partner };
    for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
      // Timed from before the claim is sent: PostgreSQL starts the lease later than this, so the abort
      // computed from here always fires before the lease really ends, whatever the network latency. On the
      // lease timers' monotonic clock: a wall clock stepped meanwhile moves nothing.
      const sentAt = LeaseTimers.now();
      // try/catch here rather than through `inDatabase()`: a wrapper's closure and async frame per call stay
      // alive across the round trip, and what survives young-generation GC is the class's largest cost
      // beside its SQL (docs/PERFORMANCE.md).
      let first: FirstClaimOutcome;
      try {
        first = await claimNewIntent(this.pool, claimInput);
      } catch (error) {
        throw unavailable('claiming', spec, error);
      }
      // Only what can never change is decided on what the first statement read: another payload under the
      // key, or a final outcome (completed, rejected: nothing moves an intent out of them). That read is as
      // of the statement's start, and its insert may have waited on a transaction changing the row (a
      // completion committing, a reconciliation run settling an unknown intent): an in_progress or unknown
      // row it shows may be settled by now. Those, and a row its snapshot could not see, are read again by
      // the re-claim's statement, after the wait. A replay of a settled key stays one round trip.
      const seen = first.claimed ? undefined : first.existing;
      const answered = seen !== undefined && settledForGood(seen, print);
      // What the first claim of a delivery found feeds the claim order, unless a read already did.
      if (round === 0 && !readFirst) this.claimOrder.observe(answered);
      if (answered) return this.answerFromRow(seen, spec, print);
      const outcome: ReclaimOutcome = first.claimed
        ? { claimed: true, ...first.row }
        : await inDatabase('claiming', spec, () => reclaimIntent(this.pool, claimInput));
      if (outcome.claimed) {
        this.metrics.claims.inc(labels);
        const lease = this.leaseTimers.arm(
          outcome.id,
          outcome.attempt,
          sentAt + this.options.leaseMs - this.options.abortMarginMs,
          { partner: spec.partner, key: spec.key },
        );
        this.log.info(
          { partner: spec.partner, key: spec.key, intentId: outcome.id, attempt: outcome.attempt },
          'intent claimed',
        );
        return {
          kind: 'leased',
          intentId: outcome.id,
          attempt: outcome.attempt,
          leaseExpiresAt: outcome.lease_expires_at,
          lease,
        };
      }
      const existing = outcome.intent;
      if (!existing) continue; // purged between the two statements: claim again
      const context = { partner: spec.partner, key: spec.key, intentId: existing.id };
      if (existing.fingerprint !== print) {
        this.metrics.conflicts.inc(labels);
        throw new IdempotencyKeyConflictError(context);
      }
      // The re-claim's read half sees the row as of the statement's start: a contender that re-claimed it
      // meanwhile is invisible there. A row that still looks claimable by our own rules is therefore read
      // again rather than trusted (the next round's statement sees the winner's commit).
      if (this.mayClaimAgain(existing, input.partnerHonoursKey)) continue;
      return replayOrRefuse(existing, context, this.metrics, this.log);
    }
    throw unavailable(
      'claiming',
      spec,
      new Error(`the intent kept changing under ${MAX_CLAIM_ROUNDS} claim attempts`),
    );
  }

  /**
   * The answer to a delivery from a row that settles it by itself ({@link settledForGood}): a conflict with
   * another payload under the key, or the replay (or rejection) of its final outcome.
   */
  private answerFromRow(row: KeyedIntentRow, spec: IntentSpec, print: string): Replay {
    const context = { partner: spec.partner, key: spec.key, intentId: row.id };
    if (row.fingerprint !== print) {
      this.metrics.conflicts.inc({ partner: spec.partner });
      throw new IdempotencyKeyConflictError(context);
    }
    return replayFinal(row, context, this.metrics, this.log);
  }

  /**
   * Whether our rules let this delivery claim the next attempt of `existing` (invariant 2): from
   * `not_executed`, or, when the partner honours our key (stored and asked), also from `unknown` or an
   * `in_progress` whose lease ended. The re-claim's statement decides for real, under a row lock.
   */
  private mayClaimAgain(existing: ExistingIntentRow, partnerHonoursKey: boolean): boolean {
    if (existing.status === IntentStatus.NotExecuted) return true;
    if (!(existing.partner_honours_key && partnerHonoursKey)) return false;
    return (
      existing.status === IntentStatus.Unknown ||
      (existing.status === IntentStatus.InProgress && !existing.lease_running)
    );
  }

  /**
   * Records the partner's success for `attempt`. If the intent was meanwhile settled another way, the answer
   * is kept in the attempt's history, raised as a `late_completion` discrepancy and a `LateCompletionError`
   * is thrown.
   */
  complete(intentId: string, attempt: number, result: CallResult = {}): Promise<RunResult> {
    const intent = this.heldIntent(intentId, attempt);
    this.assertOpen('complete', { ...intent, intentId });
    return this.record(intent, intentId, attempt, result);
  }

  /** {@link complete} for an intent whose partner and key are known (or said to be unknown). */
  private async record(
    intent: StepContext,
    intentId: string,
    attempt: number,
    result: CallResult,
  ): Promise<RunResult> {
    const about: StepContext = { partner: intent.partner, key: intent.key, intentId };
    this.leaseTimers.disarm(intentId, attempt);
    // `?.`: a JavaScript callback resolving null has still reported a success; losing it to a TypeError would
    // leave an executed call unrecorded.
    const partnerReference = result?.partnerReference ?? null;
    const response = (result?.response ?? null) as Json | null;
    const completion = { intentId, attempt, partnerReference, response, by: 'caller' };
    let row: CompletedRow | undefined;
    try {
      row = await completeAttempt(this.pool, completion);
    } catch (error) {
      row = await this.retryCompletion(about, completion, error);
    }
    if (row) {
      this.log.info({ intentId, attempt }, 'intent completed');
      return {
        intentId,
        status: 'completed',
        replayed: false,
        attempt: row.attempt,
        partnerReference,
        response,
      };
    }
    const stored = await inDatabase('reading the intent', about, () => getIntentById(this.pool, intentId));
    if (!stored) throw new RangeError(`complete: intent ${intentId} does not exist`);
    return this.settleCompletionOf(stored, attempt, partnerReference, response);
  }

  /** The completion's write changed nothing: the same success again, or a late one for another outcome. */
  private async settleCompletionOf(
    intent: Intent,
    attempt: number,
    partnerReference: string | null,
    response: Json | null,
  ): Promise<RunResult> {
    const intentId = intent.id;
    if (
      intent.status === IntentStatus.Completed &&
      (intent.attempt === attempt || intent.partnerHonoursKey) &&
      (partnerReference === null || intent.partnerReference === partnerReference)
    ) {
      // The same success reported twice (or already found by the reconciler): nothing new.
      return {
        intentId,
        status: 'completed',
        replayed: true,
        attempt: intent.attempt,
        partnerReference: intent.partnerReference,
        response: intent.response,
      };
    }
    let corrected = false;
    if (intent.status === IntentStatus.NotExecuted && intent.attempt === attempt) {
      const about = { partner: intent.partner, key: intent.key, intentId };
      corrected = await inDatabase('correcting a not-executed intent', about, () =>
        correctNotExecutedIntent(this.pool, { intentId, attempt, partnerReference, response }),
      );
    }
    return raiseLateCompletion(this.pool, this.log, {
      intent,
      attempt,
      partnerReference,
      response,
      corrected,
    });
  }

  /** Records that the partner definitely refused `attempt`. Returns false when the attempt was stale. */
  reject(intentId: string, attempt: number, reason: RejectionReason | string): Promise<boolean> {
    const intent = this.heldIntent(intentId, attempt);
    this.assertOpen('reject', { ...intent, intentId });
    return this.settleFailure(intent, intentId, attempt, 'rejected', rejectionJson(reason));
  }

  /** Records that `attempt` provably did not reach the partner; the next claim retries. */
  notExecuted(intentId: string, attempt: number, detail: string): Promise<boolean> {
    const intent = this.heldIntent(intentId, attempt);
    this.assertOpen('notExecuted', { ...intent, intentId });
    return this.settleFailure(intent, intentId, attempt, 'not_executed', { detail });
  }

  /** Records that the outcome of `attempt` is unknown; only reconciliation will settle it. */
  unknown(intentId: string, attempt: number, detail: string): Promise<boolean> {
    const intent = this.heldIntent(intentId, attempt);
    this.assertOpen('unknown', { ...intent, intentId });
    return this.settleFailure(intent, intentId, attempt, 'unknown', { detail });
  }

  /** The intent for (partner, key) with its full attempt history, or null. */
  get(partner: string, key: string): Promise<Intent | null> {
    this.assertOpen('get', { partner, key });
    return getIntentWithAttempts(this.pool, partner, key);
  }

  /**
   * Runs a local database effect once per (consumer, messageId), in the same transaction that records the
   * message. A duplicate returns `{ duplicate: true }` without running the effect; a failed effect records nothing.
   */
  inbox<T>(
    consumer: string,
    messageId: string,
    effect: (manager: EntityManager) => Promise<T>,
  ): Promise<InboxResult<T>> {
    this.assertOpen('inbox', NOT_AN_INTENT);
    return runInInbox(this.dataSource, consumer, messageId, effect);
  }

  /** A multi-step process whose steps are intents keyed `${key}:${step}`. */
  workflow(key: string): Workflow {
    this.assertOpen('workflow', NOT_AN_INTENT);
    return new Workflow(this, key);
  }

  /**
   * Retention: deletes settled intents (with their attempts) and inbox rows older than `olderThan` (the
   * dedup window). Never touches anything in progress, unknown, or referenced by a discrepancy. Deletes in
   * batches, one short transaction each, so a large backlog never holds locks for long. Returns what it
   * deleted, and whether `signal` stopped it before the end (`interrupted`).
   */
  purge(options: PurgeOptions): Promise<PurgeResult> {
    this.assertOpen('purge', NOT_AN_INTENT);
    return purgeExpired(this.pool, this.log, options);
  }

  /** Waits briefly for late answers still being recorded, then releases the pool (and an embedded server). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The abort timers of calls still in flight stay armed (they are unref'd, so they do not hold the process):
    // clearing them would let those calls outlive their lease (invariant 3).
    await Promise.race([Promise.allSettled([...this.lateAnswers]), delay(this.options.abortMarginMs)]);
    await this.release();
  }

  private async fail(
    spec: IntentSpec,
    intentId: string,
    attempt: number,
    classification: Classification,
    cause?: unknown,
  ): Promise<never> {
    const context = { partner: spec.partner, key: spec.key, intentId, cause };
    const logContext = { partner: spec.partner, key: spec.key, intentId, attempt };
    switch (classification.outcome) {
      case 'rejected':
        await this.settleFailure(spec, intentId, attempt, 'rejected', rejectionJson(classification.reason));
        this.log.info({ ...logContext, reason: classification.reason.message }, 'partner rejected the call');
        throw new IntentRejectedError({ ...context, reason: classification.reason, replayed: false });
      case 'not_executed':
        await this.settleFailure(spec, intentId, attempt, 'not_executed', { detail: classification.detail });
        this.log.info({ ...logContext, detail: classification.detail }, 'call not executed; safe to retry');
        throw new IntentNotExecutedError({ ...context, attempt, detail: classification.detail });
      case 'unknown':
        this.metrics.unknownOutcomes.inc({ partner: spec.partner });
        // If even this write fails, the intent stays in progress and is treated as unknown once its lease
        // ends: the caller's answer is the same either way.
        await this.settleFailure(spec, intentId, attempt, 'unknown', { detail: classification.detail }).catch(
          (error: unknown) =>
            this.log.error({ ...logContext, err: errorSummary(error) }, 'could not record unknown outcome'),
        );
        this.log.warn(
          { ...logContext, detail: classification.detail },
          'outcome unknown; waiting for reconciliation',
        );
        throw new IntentOutcomeUnknownError({ ...context, attempt, detail: classification.detail });
    }
  }

  private async settleFailure(
    intent: StepContext,
    intentId: string,
    attempt: number,
    outcome: FailedOutcome,
    reason: Json,
  ): Promise<boolean> {
    this.leaseTimers.disarm(intentId, attempt);
    const about = { partner: intent.partner, key: intent.key, intentId };
    const applied = await inDatabase(`recording ${outcome}`, about, () =>
      settleAttemptWithoutExecution(this.pool, { intentId, attempt, outcome, reason, by: 'caller' }),
    );
    if (!applied)
      this.log.warn({ intentId, attempt, outcome }, 'stale attempt: outcome not recorded (already settled)');
    return applied;
  }

  private listenForLateAnswer(
    spec: IntentSpec,
    intentId: string,
    attempt: number,
    callPromise: Promise<CallResult>,
  ): void {
    const late = callPromise.then(
      async (value) => {
        try {
          await this.record(spec, intentId, attempt, value);
          this.log.warn(
            { partner: spec.partner, key: spec.key, intentId, attempt },
            'late answer recorded after abort',
          );
        } catch (error) {
          this.log.error(
            { partner: spec.partner, key: spec.key, intentId, attempt, err: errorSummary(error) },
            'late answer',
          );
        }
      },
      () => undefined, // a late failure changes nothing: the intent is already unknown
    );
    this.lateAnswers.add(late);
    void late.finally(() => this.lateAnswers.delete(late));
  }

  /** After the first write of a completion failed with `firstError`: retries while the database is unreachable. */
  private async retryCompletion(
    about: StepContext,
    completion: CompletionInput,
    firstError: unknown,
  ): Promise<CompletedRow | undefined> {
    const { intentId, attempt } = completion;
    let error = firstError;
    for (let retry = 0; ; retry++) {
      if (!isConnectionError(error) || retry >= COMPLETION_RETRY_DELAYS_MS.length) {
        this.log.error(
          { intentId, attempt, err: errorSummary(error) },
          'could not record completion; reconciliation will',
        );
        throw new IntentOutcomeUnknownError({
          ...about,
          attempt,
          cause: error,
          detail: 'the partner answered but the ledger could not record it; reconciliation will settle it',
        });
      }
      await delay(COMPLETION_RETRY_DELAYS_MS[retry]);
      try {
        return await completeAttempt(this.pool, completion);
      } catch (next) {
        error = next;
      }
    }
  }

  /**
   * Partner and key of (`intentId`, `attempt`) while this process holds its lease: the two-phase API names
   * only the id, and when the database is what failed they cannot be read back from it.
   */
  private heldIntent(intentId: string, attempt: number): StepContext {
    const lease = this.leaseTimers.find(intentId, attempt);
    return lease ? { partner: lease.intent.partner, key: lease.intent.key } : NOT_AN_INTENT;
  }

  /** Every method of a closed ledger throws the one {@link LedgerClosedError}, before any database work. */
  private assertOpen(method: string, about: StepContext): void {
    if (this.closed) throw new LedgerClosedError({ ...about, method });
  }
}

/** A claim as the ledger holds it: the attempt with its lease. */
interface LeasedClaim {
  kind: 'leased';
  intentId: string;
  attempt: number;
  leaseExpiresAt: Date;
  lease: AttemptLease;
}

/** What an error says about an intent it cannot name (the call is not about one, or it is not known here). */
const NOT_AN_INTENT: StepContext = { partner: undefined, key: undefined };

function rejectionJson(reason: RejectionReason | string): Json {
  return (typeof reason === 'string' ? { message: reason } : reason) as unknown as Json;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Whether a row read for a delivery already decides its answer whatever happens next: another payload under
 * the key (a conflict), or an outcome nothing moves an intent out of (completed, rejected).
 */
function settledForGood(row: KeyedIntentRow, fingerprint: string): boolean {
  return (
    row.fingerprint !== fingerprint ||
    row.status === IntentStatus.Completed ||
    row.status === IntentStatus.Rejected
  );
}
