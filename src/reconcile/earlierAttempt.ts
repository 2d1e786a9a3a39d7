import { isoUtc } from './sqlText.js';

/**
 * When a partner's row cannot be taken as the execution of an intent's CURRENT attempt because it is, or
 * may be, the execution of an earlier one.
 *
 * An intent claimed again (attempt 1 settled `not_executed`, by a report's proof or its caller, then
 * attempt 2 claimed) may still show attempt 1's execution in a later report: the proof was wrong, or the
 * partner listed it late. That row is no evidence that attempt 2 executed: completing attempt 2 from it
 * records an execution nobody saw, and if attempt 2 did execute the partner charged twice. So for such an
 * intent a row is its current attempt's only when it is dated after both bounds below; otherwise it is an
 * earlier attempt's, or may be, and a person is told (an `orphan_partner_record` naming the earlier
 * attempt); the current attempt stays as it is (a stuck one stays stuck: doubt does not decide).
 *
 * - the current attempt's start minus `clockSkew`: the partner's clock may be behind ours by that much, so
 *   the current attempt's execution is never dated earlier (the bound matchRows and correctLateExecutions
 *   use);
 * - the latest earlier attempt's start plus `settlementLag` and `clockSkew`: the window within which a
 *   proof of absence looks for an attempt's execution (collectCandidates) and correctLateExecutions takes a
 *   row as that attempt's. A row dated inside both windows could be either attempt's: left undecided.
 *
 * A row without a time could be any attempt's. A row of a completed intent that carries the partner
 * reference its current attempt's completion recorded is that attempt's, wherever it is dated. An intent
 * whose partner honours our key is left out: there a re-claim repeats the same call, the partner
 * deduplicates it, and an earlier attempt's execution is the intent's one execution (the ledger accepts an
 * older attempt's answer the same way, completeAttempt.ts).
 *
 * Cost: the bound is NULL for an intent on its first attempt, and earlier attempts are looked up only for
 * intents on a later one, so a report of first attempts (the benchmark's million rows) pays one test per row.
 */

/**
 * SQL: for intent row `alias` (of `intents`), the instant at or before which a row of it is not its current
 * attempt's execution (see the module comment), or NULL when every row may be its current attempt's (its
 * first attempt, or a partner that honours our key). `lag` and `skew` are SQL expressions in milliseconds.
 * The earlier attempts' starts are read from `intent_attempts` by its primary key, only for an intent
 * claimed again; without those rows (written around the ledger) the current start stands in for them.
 */
export function earlierUntil(alias: string, lag: string, skew: string): string {
  const ms = (value: string) => `(${value}) * interval '1 millisecond'`;
  return `CASE WHEN ${alias}.attempt > 1 AND NOT ${alias}.partner_honours_key THEN
            GREATEST(${alias}.attempt_started_at - ${ms(skew)},
                     COALESCE((SELECT max(ea.started_at) FROM intent_attempts ea
                                WHERE ea.intent_id = ${alias}.id AND ea.attempt < ${alias}.attempt),
                              ${alias}.attempt_started_at) + ${ms(lag)} + ${ms(skew)})
          END`;
}

/**
 * SQL: a row executed at `executedAt` is, or may be, an earlier attempt's execution, given the bound
 * `until` from {@link earlierUntil}. At the bound itself it may be: doubt does not decide. `own` is, for a
 * completed intent, the partner reference its current attempt's completion recorded (otherwise NULL): a row
 * carrying it (`partnerReference`) is that attempt's own execution, however close to an earlier attempt it
 * is dated (attempt 1 answered 429, attempt 2 charged a second later and its caller recorded the reference).
 */
export function fromEarlierAttempt(
  executedAt: string,
  until: string,
  own?: { partnerReference: string; recorded: string },
): string {
  const dated = `${until} IS NOT NULL AND (${executedAt} IS NULL OR ${executedAt} <= ${until})`;
  if (!own) return `(${dated})`;
  return `(${dated} AND NOT COALESCE(${own.partnerReference} = ${own.recorded}, false))`;
}

/**
 * SQL: the end of a finance sentence about a row executed at `executedAt` that is (or may be) an earlier
 * attempt's execution of an intent now on attempt `attempt`, started at `startedAt`, with status `status`;
 * `candidate` says whether this run decided about the intent (a stuck or settled candidate) rather than
 * leaving it alone (an attempt still in flight). Begins with the intent's name: `' for intent 7 ...'`.
 */
export function earlierAttemptSentence(intent: {
  id: string;
  reference: string;
  attempt: string;
  status: string;
  startedAt: string;
  executedAt: string;
  candidate: string;
}): string {
  const { id, reference, attempt, status, startedAt, executedAt, candidate } = intent;
  const attemptN = `'attempt ' || ${attempt}`;
  const AttemptN = `'Attempt ' || ${attempt}`;
  return `' for intent ' || ${id} || COALESCE(' (reference ' || ${reference} || ')', '') ||
          COALESCE(', dated ' || ${isoUtc(executedAt)}, ', undated') ||
          ', which cannot be taken as the execution of its ' || ${attemptN} || ' (started at ' || ${isoUtc(startedAt)} ||
          '): it is, or may be, an earlier attempt''s execution, and no proof that ' || ${attemptN} ||
          ' executed. ' ||
          CASE WHEN ${status} = 'completed'
                 THEN ${AttemptN} || ' completed as well: the partner has probably charged twice.'
               WHEN ${status} = 'not_executed'
                 THEN ${AttemptN} || ' is recorded as not executed: the next delivery claims the next attempt ' ||
                      'and charges again although this execution is on record.'
               WHEN ${status} = 'rejected'
                 THEN ${AttemptN} || ' was rejected: the partner executed something we believe did not happen.'
               WHEN ${candidate}
                 THEN ${AttemptN} || ' stays ' || ${status} || ', and is not proven absent while this ' ||
                      'execution is on record; if it executed as well, the partner charged twice.'
               ELSE ${AttemptN} || ' is under way (' || ${status} || '): if it executes as well, ' ||
                    'the partner charges twice.'
          END`;
}
