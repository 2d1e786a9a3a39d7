/**
 * State machine properties (fast-check, model-based): random interleavings of claims by several workers
 * (separate ledger instances, two-phase `begin` / `complete` / `reject` / `notExecuted` / `unknown` with
 * explicit attempt numbers, stale ones included), a simulated partner that executes when a worker's request
 * reaches it (possibly late, after the lease, after a reconciliation), lease expiry (SQL, never a sleep) and
 * reconciliation of the partner's executions written as a settlement file. Every action's answer is checked
 * against the state the intent was in just before it; after every action at most one attempt per key may be
 * in flight; after every sequence the invariants of docs/DESIGN.md are checked against the database and against
 * what the partner really executed.
 *
 * Reproduce a failure with the seed and path fast-check prints (FC_NO_SHRINK=1 skips shrinking):
 *   FC_SEED=<seed> FC_PATH=<path> npx mocha ... stateProperties.test.js
 * Bigger runs: PROPERTY_RUNS=500 (default 40), PROPERTY_MAX_ACTIONS (actions drawn, default 40).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import type { Pool } from 'pg';
import acmePay from '../../reconcilers/acme-pay.js';
import { writeSettlementFile } from '../../src/demo/writeSettlementFile.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import type { FakeExecution } from '../../src/partnerFake/fakePartnerServer.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import {
  IdempotencyKeyConflictError,
  IntentInFlightError,
  IntentOutcomeUnknownError,
  IntentRejectedError,
  LateCompletionError,
} from '../../src/shared/errors/index.js';
import type { IntentSpec, Json } from '../../src/shared/types.js';
import { type Settled, settle, sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger, testLedger } from '../support/testLedger.js';

const PARTNER = acmePay.partner;
const WORKERS = 3;
/** Keys of a sequence; the last one's partner honours our idempotency key (it deduplicates). */
const KEYS = [{ honoursKey: false }, { honoursKey: false }, { honoursKey: true }];
/** Sequences of the main property, and of the one about a partner slower than its settlement lag. */
const NUM_RUNS = Number(process.env.PROPERTY_RUNS ?? 30);
const SLOW_PARTNER_RUNS = Number(process.env.PROPERTY_SLOW_RUNS ?? 20);
/** Actions drawn per sequence (those whose precondition holds run; see `sequence`). */
const MIN_DRAWN = 15;
const MAX_DRAWN = Number(process.env.PROPERTY_MAX_ACTIONS ?? 40);
/** Long: leases end only when a sequence says so (SQL), never because the test was slow. */
const LEASE_MS = 600_000;

// ---------------------------------------------------------------------------------------------------------
// The world: what the ledger's callers and the partner know, beside what the database holds.
// ---------------------------------------------------------------------------------------------------------

/** What a worker knows about its call. */
type Answer =
  | { kind: 'ok'; ref: string }
  | { kind: 'rejected' }
  /** The request never reached the partner (connection refused): definitely not executed. */
  | { kind: 'not_sent' }
  /** No answer (timeout, reset): may or may not have executed. */
  | { kind: 'timeout' };

type PartnerBehaviour = 'execute-answer' | 'execute-lost' | 'reject' | 'drop-lost';

interface SimClaim {
  n: number;
  worker: number;
  key: number;
  intentId: string;
  attempt: number;
  /** The lease of this claim was ended by a `lease ends` action. */
  leaseEnded: boolean;
  /** The request went out and the partner has not acted on it yet. */
  pending: boolean;
  sent: boolean;
  answer?: Answer;
  /** The worker reported something (it sends nothing after that). */
  reported: boolean;
  /** A report of this claim was applied by the ledger (it is no longer in flight). */
  accepted: boolean;
}

interface World {
  seq: number;
  ledgers: Ledger[];
  sql: Pool;
  dir: string;
  coverageFrom: Date;
  claims: SimClaim[];
  /** Keys with an intent (claimed at least once). */
  created: Set<number>;
  /** The partner's own record: every execution, in order. */
  executions: FakeExecution[];
  /** Executions by key, for the partner that deduplicates. */
  byKey: Map<number, FakeExecution>;
  reconciles: number;
  log: string[];
}

/** Figures over the sequences of one property (printed after it). */
function newStats() {
  return {
    sequences: 0,
    actions: 0,
    byAction: {} as Record<string, number>,
    beginOutcomes: {} as Record<string, number>,
    reportOutcomes: {} as Record<string, number>,
    executions: 0,
    keysExecutedTwice: 0,
    reconciliations: 0,
    finalStates: {} as Record<string, number>,
    discrepancies: {} as Record<string, number>,
    maxAttempt: 0,
  };
}
let stats = newStats();
const bump = (map: Record<string, number>, key: string, n = 1) => {
  map[key] = (map[key] ?? 0) + n;
};

function keyName(world: World, key: number): string {
  return `s${world.seq}-k${key}`;
}

function specOf(world: World, key: number, otherPayload = false): IntentSpec {
  const name = keyName(world, key);
  return {
    partner: PARTNER,
    operation: 'charge',
    key: `${name}:charge`,
    payload: { name, ...(otherPayload ? { tampered: true } : {}) },
    reference: name,
    amount: '10.00',
    currency: 'BRL',
    partnerHonoursKey: KEYS[key].honoursKey,
  };
}

interface AttemptState {
  attempt: number;
  owner: string | null;
  outcome: string | null;
  resolution: string | null;
  partner_reference: string | null;
  lease_running: boolean;
  started_at: Date;
  ended_at: Date | null;
  resolved_at: Date | null;
}

interface IntentState {
  id: string;
  key: string;
  reference: string;
  status: string;
  attempt: number;
  partner_reference: string | null;
  response: Json | null;
  reason: Json | null;
  resolved_by: string | null;
  settled_at: Date | null;
  partner_honours_key: boolean;
  lease_running: boolean;
  attempts: AttemptState[];
}

async function readIntents(sql: Pool, where = 'TRUE', params: unknown[] = []): Promise<IntentState[]> {
  const intents = await sql.query<Omit<IntentState, 'attempts'>>(
    `SELECT id, key, reference, status, attempt, partner_reference, response, reason, resolved_by, settled_at,
            partner_honours_key, coalesce(settled_at IS NULL AND lease_expires_at > now(), false) AS lease_running
       FROM intents WHERE ${where} ORDER BY id`,
    params,
  );
  if (intents.rows.length === 0) return [];
  const attempts = await sql.query<AttemptState & { intent_id: string }>(
    `SELECT intent_id, attempt, owner, outcome, resolution, partner_reference, lease_expires_at > now() AS lease_running,
            started_at, ended_at, resolved_at
       FROM intent_attempt_history WHERE intent_id = ANY($1::bigint[]) ORDER BY intent_id, attempt`,
    [intents.rows.map((i) => i.id)],
  );
  return intents.rows.map((i) => ({ ...i, attempts: attempts.rows.filter((a) => a.intent_id === i.id) }));
}

async function readIntent(world: World, key: number): Promise<IntentState | undefined> {
  const [intent] = await readIntents(world.sql, 'partner = $1 AND key = $2', [
    PARTNER,
    specOf(world, key).key,
  ]);
  return intent;
}

/** The part of an intent that a refused or repeated action must leave exactly as it was. */
function settledFace(intent: IntentState | undefined) {
  if (!intent) return undefined;
  return JSON.parse(
    JSON.stringify({
      status: intent.status,
      attempt: intent.attempt,
      partner_reference: intent.partner_reference,
      response: intent.response,
      reason: intent.reason,
      resolved_by: intent.resolved_by,
      settled_at: intent.settled_at,
      attempts: intent.attempts.length,
    }),
  );
}

async function dbNow(sql: Pool): Promise<Date> {
  return (await sql.query<{ now: Date }>('SELECT now() AS now')).rows[0].now;
}

/** Invariant 1, after every action: never two attempts of one intent with no outcome whose leases both run. */
async function assertOneInFlight(sql: Pool): Promise<void> {
  const twice = await sql.query(
    `SELECT intent_id, count(*)::int AS n FROM intent_attempt_history
      WHERE outcome IS NULL AND lease_expires_at > now() GROUP BY intent_id HAVING count(*) > 1`,
  );
  expect(twice.rows, 'two attempts in flight for one intent').to.deep.equal([]);
}

/** The partner executes (or, when it deduplicates and has executed this key already, replays). */
function partnerExecutes(world: World, claim: SimClaim): FakeExecution {
  if (KEYS[claim.key].honoursKey) {
    const earlier = world.byKey.get(claim.key);
    if (earlier) return earlier;
  }
  const execution: FakeExecution = {
    id: `nsu-${world.seq}-${world.executions.length + 1}`,
    reference: keyName(world, claim.key),
    amount: '10.00',
    currency: 'BRL',
    executedAt: new Date().toISOString(),
    ...(KEYS[claim.key].honoursKey ? { idempotencyKey: specOf(world, claim.key).key } : {}),
  };
  world.executions.push(execution);
  if (KEYS[claim.key].honoursKey) world.byKey.set(claim.key, execution);
  return execution;
}

async function reconcileExecutions(world: World, to?: Date, file?: string): Promise<ReconciliationResult> {
  const path = file ?? join(world.dir, `s${world.seq}-r${++world.reconciles}.csv`);
  if (!file) writeSettlementFile(path, world.executions);
  const [report] = await reconcile({
    pool: world.sql,
    file: path,
    logger: capturingLogger(),
    reconciler: {
      ...acmePay,
      stuckAfter: '0s',
      settlementLag: '0s',
      // The fake partner dates its executions by this machine's clock, the database's.
      clockSkew: '0s',
      coverage: { from: world.coverageFrom, to: to ?? (await dbNow(world.sql)) },
    },
  });
  stats.reconciliations += 1;
  expect(report.status, `reconciliation failed: ${report.error}`).to.equal('succeeded');
  expect(report.rowsRejected).to.equal(0);
  return report;
}

function describeOutcome(result: Settled<unknown>): string {
  if (result.ok) {
    const value = result.value as { kind?: string; replayed?: boolean } | boolean;
    if (typeof value === 'boolean') return value ? 'applied' : 'stale';
    if (value?.kind) return value.kind;
    return value?.replayed ? 'repeat' : 'applied';
  }
  return (result.error as Error).name;
}

// ---------------------------------------------------------------------------------------------------------
// Actions
// ---------------------------------------------------------------------------------------------------------

type Cmd = fc.AsyncCommand<World, World>;

/** Runs an action, then the invariant that must hold after every single one. */
abstract class Action implements Cmd {
  abstract readonly name: string;
  abstract check(world: World): boolean;
  protected abstract act(world: World): Promise<void>;
  async run(world: World): Promise<void> {
    world.log.push(this.toString());
    stats.actions += 1;
    bump(stats.byAction, this.name);
    await this.act(world);
    await assertOneInFlight(world.sql);
  }
  abstract toString(): string;
}

/** A worker is handed the message of `key` (a delivery or redelivery) and calls `begin`. */
class Begin extends Action {
  readonly name: string;
  constructor(
    readonly worker: number,
    readonly key: number,
    readonly otherPayload: boolean,
  ) {
    super();
    this.name = otherPayload ? 'begin (other payload)' : 'begin';
  }
  check(world: World): boolean {
    return !this.otherPayload || world.created.has(this.key);
  }
  protected async act(world: World): Promise<void> {
    const pre = await readIntent(world, this.key);
    const result = await settle(world.ledgers[this.worker].begin(specOf(world, this.key, this.otherPayload)));
    const post = await readIntent(world, this.key);
    const expected = expectedBegin(pre, this.otherPayload);
    const outcome = describeOutcome(result);
    bump(stats.beginOutcomes, `${pre?.status ?? 'none'} -> ${outcome}`);
    const context = `${this}: intent was ${JSON.stringify(settledFace(pre))}, got ${outcome}`;
    if (expected !== 'claim')
      expect(settledFace(post), `${context}: intent changed`).to.deep.equal(settledFace(pre));
    switch (expected) {
      case 'claim': {
        expect(result.ok && (result.value as { kind: string }).kind, context).to.equal('claimed');
        const claim = (result as { value: { intentId: string; attempt: number } }).value;
        expect(claim.attempt, context).to.equal((pre?.attempt ?? 0) + 1);
        expect(post?.status).to.equal('in_progress');
        expect(post?.attempt).to.equal(claim.attempt);
        expect(post?.attempts.map((a) => a.attempt)).to.deep.equal(
          Array.from({ length: claim.attempt }, (_, i) => i + 1),
        );
        // Invariant 1 from the callers' side: no other claim of this key may still be in flight.
        const inFlight = world.claims.filter((c) => c.key === this.key && !c.leaseEnded && !c.accepted);
        expect(
          inFlight.map((c) => `claim #${c.n} (attempt ${c.attempt})`),
          `${context}: granted while in flight`,
        ).to.deep.equal([]);
        world.created.add(this.key);
        world.claims.push({
          n: world.claims.length,
          worker: this.worker,
          key: this.key,
          intentId: claim.intentId,
          attempt: claim.attempt,
          leaseEnded: false,
          pending: false,
          sent: false,
          reported: false,
          accepted: false,
        });
        stats.maxAttempt = Math.max(stats.maxAttempt, claim.attempt);
        return;
      }
      case 'replay': {
        // Invariant 5: the stored result, exactly.
        expect(result.ok, context).to.equal(true);
        const replay = (result as unknown as { value: { kind: string; result: Record<string, unknown> } })
          .value;
        expect(replay.kind, context).to.equal('replay');
        expect(replay.result, context).to.deep.equal({
          intentId: pre?.id,
          status: 'completed',
          replayed: true,
          attempt: pre?.attempt,
          partnerReference: pre?.partner_reference,
          response: pre?.response,
        });
        return;
      }
      case 'rejected': {
        const error = (result as { error: unknown }).error;
        expect(error, context).to.be.instanceOf(IntentRejectedError);
        expect((error as IntentRejectedError).replayed).to.equal(true);
        expect((error as IntentRejectedError).reason).to.deep.equal(pre?.reason);
        return;
      }
      case 'in-flight':
        expect((result as { error: unknown }).error, context).to.be.instanceOf(IntentInFlightError);
        return;
      case 'unknown':
        expect((result as { error: unknown }).error, context).to.be.instanceOf(IntentOutcomeUnknownError);
        return;
      case 'conflict':
        expect((result as { error: unknown }).error, context).to.be.instanceOf(IdempotencyKeyConflictError);
        return;
    }
  }
  toString(): string {
    return `begin(w${this.worker}, k${this.key}${this.otherPayload ? ', other payload' : ''})`;
  }
}

/** What `begin` must answer, from the intent's state just before (docs/DESIGN.md, states). */
function expectedBegin(
  pre: IntentState | undefined,
  otherPayload: boolean,
): 'claim' | 'replay' | 'rejected' | 'in-flight' | 'unknown' | 'conflict' {
  if (!pre) return 'claim';
  if (otherPayload) return 'conflict';
  switch (pre.status) {
    case 'completed':
      return 'replay';
    case 'rejected':
      return 'rejected';
    case 'not_executed':
      return 'claim';
    case 'in_progress':
      if (pre.lease_running) return 'in-flight';
      return pre.partner_honours_key ? 'claim' : 'unknown';
    default:
      return pre.partner_honours_key ? 'claim' : 'unknown';
  }
}

/** Picks the `pick`-th (modulo) of the claims `filter` accepts. */
function pickClaim(world: World, pick: number, filter: (c: SimClaim) => boolean): SimClaim | undefined {
  const eligible = world.claims.filter(filter);
  return eligible.length === 0 ? undefined : eligible[pick % eligible.length];
}

const canSend = (c: SimClaim) => !c.sent && !c.reported && !c.leaseEnded;

/**
 * A worker holding a claim sends its request (only while its lease runs: the signal aborts before the lease
 * ends, invariant 3), or finds the partner refusing connections (definitely not sent).
 */
class Send extends Action {
  readonly name = 'send';
  constructor(
    readonly pick: number,
    readonly refused: boolean,
  ) {
    super();
  }
  check(world: World): boolean {
    return world.claims.some(canSend);
  }
  protected async act(world: World): Promise<void> {
    const claim = pickClaim(world, this.pick, canSend) as SimClaim;
    claim.sent = true;
    if (this.refused) claim.answer = { kind: 'not_sent' };
    else claim.pending = true;
  }
  toString(): string {
    return `send(#${this.pick}${this.refused ? ', connection refused' : ''})`;
  }
}

/** The partner acts on a request it holds: at any time, even after the lease ended or a reconciliation. */
class PartnerActs extends Action {
  readonly name = 'partner acts';
  constructor(
    readonly pick: number,
    readonly behaviour: PartnerBehaviour,
  ) {
    super();
  }
  check(world: World): boolean {
    return world.claims.some((c) => c.pending);
  }
  protected async act(world: World): Promise<void> {
    const claim = pickClaim(world, this.pick, (c) => c.pending) as SimClaim;
    claim.pending = false;
    const dedups = KEYS[claim.key].honoursKey && world.byKey.has(claim.key);
    switch (this.behaviour) {
      case 'execute-answer':
        claim.answer = { kind: 'ok', ref: partnerExecutes(world, claim).id };
        return;
      case 'execute-lost':
        partnerExecutes(world, claim);
        claim.answer = { kind: 'timeout' };
        return;
      case 'reject':
        // A partner that deduplicates answers a repeated key with the execution it already made.
        claim.answer = dedups ? { kind: 'ok', ref: partnerExecutes(world, claim).id } : { kind: 'rejected' };
        return;
      case 'drop-lost':
        claim.answer = { kind: 'timeout' };
        return;
    }
  }
  toString(): string {
    return `partner(#${this.pick}, ${this.behaviour})`;
  }
}

/**
 * A worker reports what it knows, honestly, with its claim's attempt number, however late: it may have been
 * reported before (a repeat), its lease may be over, the reconciler or a newer attempt may have settled it.
 */
class Report extends Action {
  readonly name = 'report';
  /** `sent`: a claim whose request went out (answered or not); `any`: any claim, sent or not. */
  constructor(
    readonly pick: number,
    readonly among: 'sent' | 'any',
  ) {
    super();
  }
  private eligible(c: SimClaim): boolean {
    return this.among === 'any' || c.sent;
  }
  check(world: World): boolean {
    return world.claims.some((c) => this.eligible(c));
  }
  protected async act(world: World): Promise<void> {
    const claim = pickClaim(world, this.pick, (c) => this.eligible(c)) as SimClaim;
    claim.reported = true;
    const ledger = world.ledgers[claim.worker];
    const pre = (await readIntent(world, claim.key)) as IntentState;
    const answer: Answer = claim.answer ?? (claim.sent ? { kind: 'timeout' } : { kind: 'not_sent' });
    const context = `${this} = claim #${claim.n} (k${claim.key} attempt ${claim.attempt}) reports ${JSON.stringify(answer)}; intent was ${JSON.stringify(settledFace(pre))}`;
    if (answer.kind === 'ok') {
      const result = await settle(
        ledger.complete(claim.intentId, claim.attempt, {
          partnerReference: answer.ref,
          response: { id: answer.ref },
        }),
      );
      const post = (await readIntent(world, claim.key)) as IntentState;
      const expected = expectedCompletion(pre, claim.attempt, answer.ref);
      const outcome = describeOutcome(result);
      bump(stats.reportOutcomes, `complete on ${pre.status} -> ${outcome}`);
      if (expected === 'applied') {
        expect(outcome, context).to.equal('applied');
        expect(post, context).to.deep.include({
          status: 'completed',
          attempt: pre.attempt,
          partner_reference: answer.ref,
        });
        claim.accepted = true;
        return;
      }
      if (expected === 'corrected') {
        expect((result as { error?: unknown }).error, context).to.be.instanceOf(LateCompletionError);
        expect((result as { error?: LateCompletionError }).error?.corrected, context).to.equal(true);
        expect(post, context).to.deep.include({
          status: 'completed',
          attempt: pre.attempt,
          partner_reference: answer.ref,
        });
        const raised = await world.sql.query(
          `SELECT status FROM discrepancies WHERE kind = 'late_completion' AND intent_id = $1 AND attempt = $2`,
          [claim.intentId, claim.attempt],
        );
        expect(raised.rows, `${context}: late_completion raised`).to.deep.equal([{ status: 'open' }]);
        claim.accepted = true;
        return;
      }
      // Invariant 4: a repeat or a late answer never changes the intent settled by another attempt.
      expect(settledFace(post), `${context}: intent overwritten`).to.deep.equal(settledFace(pre));
      if (expected === 'repeat') {
        expect(outcome, context).to.equal('repeat');
        return;
      }
      expect((result as { error?: unknown }).error, context).to.be.instanceOf(LateCompletionError);
      const late = await world.sql.query(
        `SELECT status FROM discrepancies WHERE kind = 'late_completion' AND intent_id = $1 AND attempt = $2`,
        [claim.intentId, claim.attempt],
      );
      expect(late.rows, `${context}: late_completion raised`).to.deep.equal([{ status: 'open' }]);
      const attempt = post.attempts.find((a) => a.attempt === claim.attempt);
      expect(attempt?.outcome, context).to.equal('completed');
      return;
    }
    const method = { rejected: 'reject', not_sent: 'notExecuted', timeout: 'unknown' } as const;
    const outcomeName = { rejected: 'rejected', not_sent: 'not_executed', timeout: 'unknown' } as const;
    const result = await settle(
      answer.kind === 'rejected'
        ? ledger.reject(claim.intentId, claim.attempt, 'card declined')
        : answer.kind === 'not_sent'
          ? ledger.notExecuted(claim.intentId, claim.attempt, 'connection refused')
          : ledger.unknown(claim.intentId, claim.attempt, 'no answer'),
    );
    const post = (await readIntent(world, claim.key)) as IntentState;
    const applies = pre.status === 'in_progress' && pre.attempt === claim.attempt;
    bump(stats.reportOutcomes, `${method[answer.kind]} on ${pre.status} -> ${describeOutcome(result)}`);
    expect(result, context).to.deep.equal({ ok: true, value: applies });
    if (applies) {
      expect(post.status, context).to.equal(outcomeName[answer.kind]);
      claim.accepted = true;
    } else {
      expect(settledFace(post), `${context}: stale report changed the intent`).to.deep.equal(
        settledFace(pre),
      );
    }
  }
  toString(): string {
    return `report(#${this.pick} of ${this.among})`;
  }
}

/** What `complete` must do, from the intent's state just before (completeAttempt's fence, docs/DESIGN.md, invariant 4). */
function expectedCompletion(
  pre: IntentState,
  attempt: number,
  ref: string,
): 'applied' | 'repeat' | 'corrected' | 'late' {
  const sameExecution = pre.attempt === attempt || pre.partner_honours_key;
  // Proven "not executed" by the reconciler, but this very attempt's success arrived and nothing retried
  // it yet: the ledger corrects the intent to completed (and raises late_completion) so it is not re-charged.
  if (pre.status === 'not_executed' && pre.attempt === attempt) return 'corrected';
  if (
    (pre.status === 'in_progress' || pre.status === 'unknown') &&
    (pre.attempt === attempt || (pre.partner_honours_key && pre.attempt > attempt))
  )
    return 'applied';
  if (pre.status === 'completed' && sameExecution && pre.partner_reference === ref) return 'repeat';
  return 'late';
}

/** The lease of `key`'s current attempt ends (as time passing would make it). */
class LeaseEnds extends Action {
  readonly name = 'lease ends';
  constructor(readonly key: number) {
    super();
  }
  check(world: World): boolean {
    return world.created.has(this.key);
  }
  protected async act(world: World): Promise<void> {
    await endLeases(world, specOf(world, this.key).key);
    for (const claim of world.claims) if (claim.key === this.key) claim.leaseEnded = true;
  }
  toString(): string {
    return `leaseEnds(k${this.key})`;
  }
}

async function endLeases(world: World, key: string | null): Promise<void> {
  await world.sql.query(
    `UPDATE intents SET lease_expires_at = now() - interval '1 hour'
      WHERE partner = $1 AND ($2::text IS NULL OR key = $2) AND settled_at IS NULL
        AND lease_expires_at > now() - interval '1 hour'`,
    [PARTNER, key],
  );
  await world.sql.query(
    `UPDATE intent_attempts a SET lease_expires_at = now() - interval '1 hour'
       FROM intents i
      WHERE a.intent_id = i.id AND i.partner = $1 AND ($2::text IS NULL OR i.key = $2) AND a.lease_expires_at > now()`,
    [PARTNER, key],
  );
}

/** The partner's settlement file (everything it executed so far) is reconciled. */
class Reconcile extends Action {
  readonly name = 'reconcile';
  check(): boolean {
    return true;
  }
  protected async act(world: World): Promise<void> {
    const before = (await readIntents(world.sql)).filter((i) => i.lease_running);
    await reconcileExecutions(world);
    // Invariant 3: the reconciler never touches an intent whose lease may still be running.
    const after = await readIntents(world.sql, 'id = ANY($1::bigint[])', [before.map((i) => i.id)]);
    expect(after.map(settledFace), 'reconciler touched a running lease').to.deep.equal(
      before.map(settledFace),
    );
  }
  toString(): string {
    return 'reconcile()';
  }
}

/**
 * One random action, weighted towards the ones that move intents along, on the keys `keys` draws.
 * `otherPayload`: also deliveries of a known key with a different payload (key conflicts).
 */
function actionOn(keys: fc.Arbitrary<number>, otherPayload: boolean): fc.Arbitrary<Cmd> {
  const workers = fc.nat(WORKERS - 1);
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(workers, keys).map(([w, k]) => new Begin(w, k, false)) },
    {
      weight: otherPayload ? 1 : 0,
      arbitrary: fc.tuple(workers, keys).map(([w, k]) => new Begin(w, k, true)),
    },
    { weight: 5, arbitrary: fc.tuple(fc.nat(), fc.nat(4)).map(([pick, r]) => new Send(pick, r === 0)) },
    {
      weight: 5,
      arbitrary: fc
        .tuple(
          fc.nat(),
          fc.constantFrom<PartnerBehaviour>(
            'execute-answer',
            'execute-answer',
            'execute-lost',
            'reject',
            'drop-lost',
          ),
        )
        .map(([pick, behaviour]) => new PartnerActs(pick, behaviour)),
    },
    { weight: 3, arbitrary: fc.nat().map((pick) => new Report(pick, 'sent')) },
    { weight: 1, arbitrary: fc.nat().map((pick) => new Report(pick, 'any')) },
    { weight: 3, arbitrary: keys.map((k) => new LeaseEnds(k)) },
    { weight: 3, arbitrary: fc.constant(null).map(() => new Reconcile()) },
  );
}

/**
 * A sequence: drawn actions run in order; one whose precondition does not hold (a send with no claim, say)
 * is skipped, so fewer run than are drawn. Shrinking removes actions and simplifies their arguments.
 */
function sequenceOf(
  action: fc.Arbitrary<Cmd>,
  drawn = { min: MIN_DRAWN, max: MAX_DRAWN },
): fc.Arbitrary<Cmd[]> {
  return fc.array(action, { minLength: drawn.min, maxLength: drawn.max });
}

/** Every key; the first one gets half the traffic, so more actions meet on it. */
const allKeys = sequenceOf(actionOn(fc.constantFrom(0, 0, 0, 1, 2), true));
/** One key whose partner does not deduplicate: where a partner later than its settlement lag hurts most. */
const oneKey = sequenceOf(actionOn(fc.constant(0), false), { min: 25, max: 50 });

// ---------------------------------------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------------------------------------

describe('faults: state machine properties (fast-check, several workers, leases, partner, reconciliation)', function () {
  this.timeout(Math.max(120_000, Math.max(NUM_RUNS, SLOW_PARTNER_RUNS) * 5_000));
  const db = useFreshDatabase('state_props');
  let sql: Pool;
  let ledgers: Ledger[] = [];
  let dir: string;
  let seq = 0;

  before(async () => {
    sql = sqlPool(db.url, 4);
    ledgers = await Promise.all(
      Array.from({ length: WORKERS }, (_, i) =>
        testLedger(db.url, { owner: `worker-${i}`, leaseMs: LEASE_MS, poolSize: 2 }),
      ),
    );
    dir = mkdtempSync(join(tmpdir(), 'state-props-'));
  });
  after(async () => {
    await Promise.all(ledgers.map((ledger) => ledger.close()));
    await sql?.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh sequence: empty tables and one completed anchor intent, so no report is ever empty. */
  async function newWorld(): Promise<World> {
    await sql.query(
      `TRUNCATE intents, intent_attempts, discrepancies, discrepancy_history, partner_records,
                reconciliation_runs RESTART IDENTITY CASCADE`,
    );
    const world: World = {
      seq: ++seq,
      ledgers,
      sql,
      dir,
      coverageFrom: new Date((await dbNow(sql)).getTime() - 1_000),
      claims: [],
      created: new Set(),
      executions: [],
      byKey: new Map(),
      reconciles: 0,
      log: [],
    };
    const anchor: IntentSpec = {
      ...specOf(world, 0),
      key: `s${world.seq}-anchor`,
      reference: `s${world.seq}-anchor`,
    };
    const claim = await ledgers[0].begin(anchor);
    if (claim.kind !== 'claimed') throw new Error('anchor not claimed');
    const execution: FakeExecution = {
      id: `nsu-${world.seq}-anchor`,
      reference: anchor.reference as string,
      amount: '10.00',
      currency: 'BRL',
      executedAt: new Date().toISOString(),
    };
    world.executions.push(execution);
    await ledgers[0].complete(claim.intentId, claim.attempt, { partnerReference: execution.id });
    return world;
  }

  /** After a sequence: leases end, the partner's file is reconciled twice, then every invariant is checked. */
  async function checkInvariants(world: World): Promise<void> {
    await endLeases(world, null);
    const to = await dbNow(sql);
    const first = await reconcileExecutions(world, to);
    const file = join(world.dir, `s${world.seq}-r${world.reconciles}.csv`);

    // Invariant 7: the same report again resolves nothing, flags nothing, changes no table.
    const before = await snapshot(sql);
    const again = await reconcileExecutions(world, to, file);
    expect(again.resolved, 're-run resolved something').to.deep.equal({ completed: 0, notExecuted: 0 });
    expect(
      Object.values(again.discrepancies).every((n) => n === 0),
      're-run flagged something',
    ).to.equal(true);
    expect(await snapshot(sql), 're-run changed a table').to.deep.equal(before);
    expect(again.matched).to.equal(first.matched);

    const intents = await readIntents(sql, 'partner = $1', [PARTNER]);
    const discrepancies = await sql.query<{
      kind: string;
      intent_id: string | null;
      attempt: number | null;
      status: string;
    }>('SELECT kind, intent_id, attempt, status FROM discrepancies ORDER BY id');
    const openOn = (intentId: string) =>
      discrepancies.rows.filter((d) => d.intent_id === intentId && d.status === 'open').map((d) => d.kind);
    for (const d of discrepancies.rows) bump(stats.discrepancies, d.kind);
    // Nothing outside our intents: no orphan without an intent.
    expect(discrepancies.rows.filter((d) => d.intent_id === null)).to.deep.equal([]);

    for (const intent of intents) {
      const where = `intent ${intent.id} (${intent.key}, ${intent.status}, attempt ${intent.attempt}): ${JSON.stringify(intent.attempts)}`;
      bump(stats.finalStates, intent.status);

      // Invariant 1: at most one attempt without an outcome whose lease runs (all leases have ended now).
      expect(
        intent.attempts.filter((a) => a.outcome === null && a.lease_running),
        where,
      ).to.deep.equal([]);

      // Invariant 2: attempts 1..n; a new one only after the previous was not executed (or the partner
      // deduplicates our key), and only after that was known.
      expect(
        intent.attempts.map((a) => a.attempt),
        where,
      ).to.deep.equal(Array.from({ length: intent.attempt }, (_, i) => i + 1));
      for (const [i, previous] of intent.attempts.slice(0, -1).entries()) {
        const next = intent.attempts[i + 1];
        if (intent.partner_honours_key) continue;
        const notExecuted = previous.outcome === 'not_executed' || previous.resolution === 'not_executed';
        expect(notExecuted, `${where}: attempt ${next.attempt} after attempt ${previous.attempt}`).to.equal(
          true,
        );
        const knownAt = previous.outcome === 'not_executed' ? previous.ended_at : previous.resolved_at;
        expect((knownAt as Date).getTime(), where).to.be.at.most(next.started_at.getTime());
      }

      // Invariant 4: every completion a worker reported either settled the intent or is a late_completion.
      for (const attempt of intent.attempts.filter((a) => a.outcome === 'completed')) {
        const settledByIt =
          intent.status === 'completed' &&
          (intent.attempt === attempt.attempt || intent.partner_honours_key) &&
          intent.partner_reference === attempt.partner_reference;
        const flagged = discrepancies.rows.some(
          (d) => d.kind === 'late_completion' && d.intent_id === intent.id && d.attempt === attempt.attempt,
        );
        expect(settledByIt || flagged, `${where}: completion of attempt ${attempt.attempt} lost`).to.equal(
          true,
        );
      }

      // Invariant 6: settled, or in an open discrepancy; and the ledger agrees with what the partner did.
      const executed = world.executions.filter((e) => e.reference === intent.reference);
      const settled = ['completed', 'rejected', 'not_executed'].includes(intent.status);
      expect(settled || openOn(intent.id).length > 0, `${where}: neither settled nor flagged`).to.equal(true);
      if (intent.status === 'completed') {
        expect(
          executed.map((e) => e.id),
          `${where}: completed without such an execution`,
        ).to.include(intent.partner_reference);
      }
      if (executed.length >= 1 && intent.status !== 'completed') {
        expect(openOn(intent.id), `${where}: executed, not completed, not flagged`).to.not.deep.equal([]);
      }
      if (executed.length > 1) {
        stats.keysExecutedTwice += 1;
        expect(
          openOn(intent.id),
          `${where}: executed ${executed.length} times, not flagged`,
        ).to.not.deep.equal([]);
      }
    }
    // No partner execution without an intent.
    const references = new Set(intents.map((i) => i.reference));
    expect(world.executions.filter((e) => !references.has(e.reference))).to.deep.equal([]);
    stats.executions += world.executions.length;

    // Invariant 5: replay is faithful; a different payload is a conflict; none of it changes anything.
    const beforeReplays = await snapshot(sql);
    for (const intent of intents) {
      const key =
        intent.key === `s${world.seq}-anchor` ? undefined : Number(/-k(\d+):/.exec(intent.key)?.[1]);
      if (key === undefined) continue;
      const spec = specOf(world, key);
      if (intent.status === 'completed') {
        const replay = await ledgers[key % WORKERS].begin(spec);
        expect(replay, intent.key).to.deep.equal({
          kind: 'replay',
          result: {
            intentId: intent.id,
            status: 'completed',
            replayed: true,
            attempt: intent.attempt,
            partnerReference: intent.partner_reference,
            response: intent.response,
          },
        });
      } else if (intent.status === 'rejected') {
        const refused = await settle(ledgers[key % WORKERS].begin(spec));
        expect(refused.ok).to.equal(false);
        expect((refused as { error: unknown }).error).to.be.instanceOf(IntentRejectedError);
        expect(((refused as { error: unknown }).error as IntentRejectedError).reason).to.deep.equal(
          intent.reason,
        );
      }
      const conflict = await settle(ledgers[0].begin(specOf(world, key, true)));
      expect((conflict as { error?: unknown }).error, intent.key).to.be.instanceOf(
        IdempotencyKeyConflictError,
      );
    }
    expect(await snapshot(sql), 'a replay changed something').to.deep.equal(beforeReplays);
  }

  /** Runs `runs` sequences of `sequences` through the model, checking the invariants after each. */
  async function holds(sequences: fc.Arbitrary<Cmd[]>, runs: number, examples: Cmd[][] = []): Promise<void> {
    stats = newStats();
    const started = Date.now();
    const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
    await fc.assert(
      fc.asyncProperty(sequences, async (commands) => {
        const world = await newWorld();
        try {
          await fc.asyncModelRun(() => ({ model: world, real: world }), commands);
          await checkInvariants(world);
        } catch (error) {
          (error as Error).message += `\n  sequence s${world.seq} ran: ${world.log.join(', ')}`;
          throw error;
        }
        stats.sequences += 1;
      }),
      {
        numRuns: runs,
        examples: examples.map((example) => [example] as [Cmd[]]),
        seed,
        path: process.env.FC_PATH,
        endOnFailure: process.env.FC_NO_SHRINK === '1',
        verbose: 1,
      },
    );
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`      ${stats.sequences} sequences, ${stats.actions} actions run, in ${seconds} s`);
    console.log(`      actions: ${JSON.stringify(stats.byAction)}`);
    console.log(`      begin (state before -> answer): ${JSON.stringify(stats.beginOutcomes)}`);
    console.log(`      reports (state before -> answer): ${JSON.stringify(stats.reportOutcomes)}`);
    console.log(
      `      partner executions ${stats.executions} (keys executed twice: ${stats.keysExecutedTwice}),` +
        ` reconciliations ${stats.reconciliations}, highest attempt ${stats.maxAttempt}`,
    );
    console.log(`      final states: ${JSON.stringify(stats.finalStates)}`);
    console.log(`      discrepancies: ${JSON.stringify(stats.discrepancies)}`);
  }

  it(`holds the invariants over ${NUM_RUNS} random sequences on 3 keys (${MIN_DRAWN}-${MAX_DRAWN} actions drawn each)`, async () => {
    await holds(allKeys, NUM_RUNS);
  });

  it(`a partner later than its settlement lag: ${SLOW_PARTNER_RUNS} sequences on one key, every second execution flagged`, async () => {
    await holds(oneKey, SLOW_PARTNER_RUNS, [
      // The partner executes attempt 1 after its lease ended and the reconciler proved it absent; attempt 2
      // runs and executes too; then attempt 1's answer arrives: two executions, both flagged.
      [
        new Begin(0, 0, false),
        new Send(0, false),
        new LeaseEnds(0),
        new Reconcile(),
        new PartnerActs(0, 'execute-answer'),
        new Begin(1, 0, false),
        new Send(0, false),
        new PartnerActs(0, 'execute-answer'),
        new Report(0, 'sent'),
        new Report(1, 'sent'),
      ],
      // Same, but the late answer arrives while the intent is still not_executed, before anyone retries.
      [
        new Begin(0, 0, false),
        new Send(0, false),
        new Report(0, 'sent'),
        new LeaseEnds(0),
        new Reconcile(),
        new PartnerActs(0, 'execute-answer'),
        new Report(0, 'sent'),
        new Begin(2, 0, false),
        new Send(0, false),
        new PartnerActs(0, 'execute-answer'),
        new Report(1, 'sent'),
      ],
    ]);
  });

  /**
   * The reconciler proved attempt 1 absent (the partner was later than its settlement lag), then attempt 1's
   * success arrived. The ledger keeps it, raises `late_completion` and, since nothing retried it yet, corrects
   * the intent to `completed`: the next delivery replays instead of charging a second time.
   */
  it('after a late success on a not_executed intent, the next delivery does not call the partner again', async () => {
    const world = await newWorld();
    const spec = specOf(world, 0);
    const claim = await ledgers[0].begin(spec);
    expect(claim.kind).to.equal('claimed');
    const { intentId, attempt } = claim as { intentId: string; attempt: number };
    await endLeases(world, null);
    const report = await reconcileExecutions(world);
    expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 1 });
    // The partner executed attempt 1 after all; its answer reaches the worker now.
    const late = await settle(ledgers[0].complete(intentId, attempt, { partnerReference: 'nsu-late-1' }));
    expect((late as { error?: unknown }).error).to.be.instanceOf(LateCompletionError);
    const intent = await readIntent(world, 0);
    expect(intent?.status).to.equal('completed');
    expect(intent?.attempts[0]).to.deep.include({ outcome: 'completed', partner_reference: 'nsu-late-1' });
    // Redelivery: a replay, never a new attempt.
    const next = await settle(ledgers[1].begin(spec));
    expect(next.ok && (next.value as { kind: string }).kind, 'a new attempt was claimed').to.not.equal(
      'claimed',
    );
  });
});

/** Every table a run or a replay may change, except the run log itself (each run adds its own row). */
async function snapshot(sql: Pool): Promise<Record<string, unknown[]>> {
  const tables: Record<string, string> = {
    intents: 'SELECT * FROM intents ORDER BY id',
    intent_attempts: 'SELECT * FROM intent_attempts ORDER BY intent_id, attempt',
    discrepancies: 'SELECT * FROM discrepancies ORDER BY id',
    discrepancy_history: 'SELECT * FROM discrepancy_history ORDER BY id',
    partner_records: 'SELECT * FROM partner_records ORDER BY id',
  };
  const result: Record<string, unknown[]> = {};
  for (const [name, query] of Object.entries(tables)) {
    result[name] = JSON.parse(JSON.stringify((await sql.query(query)).rows));
  }
  return result;
}
