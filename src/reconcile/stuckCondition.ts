/**
 * SQL condition: intent `alias` is stuck, i.e. `unknown` or `in_progress` and its lease ended more than
 * stuckAfter ago (the reconciler never touches an intent whose lease may still be running, invariant 3).
 * `stuckAfterParam` is the placeholder of stuckAfter in milliseconds. The same text is used to select the
 * intents and, again, in the WHERE of every write to them: that repetition is the fence that makes a
 * caller's answer arriving meanwhile win over the run's decision instead of being overwritten.
 */
export function stuckCondition(alias: string, stuckAfterParam: string): string {
  return `(${alias}.status IN ('unknown', 'in_progress')
           AND COALESCE(${alias}.lease_expires_at, '-infinity') < now() - ${stuckAfterParam} * interval '1 millisecond')`;
}
