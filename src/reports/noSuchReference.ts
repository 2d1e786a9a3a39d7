import Decimal from 'decimal.js';
import { JsonNumber, type JsonValue } from './parseJsonKeepingNumbers.js';

/**
 * How a partner's lookup says it has nothing under a reference, when it answers HTTP 404: a field of the
 * JSON body with a value (`{ field: 'error.code', equals: 'resource_missing' }`, Stripe), or no body at all
 * (`{ emptyBody: true }`). The answer must be one the partner gives for an unknown reference *only*: Twilio's
 * `{ "code": 20404 }` is no such answer, since Twilio gives it for any unknown URL (a mistyped lookup path,
 * another API version), so it would let a wrong path prove absence exactly like a bare 404.
 *
 * Why it must be said: a 404 is also what a wrong path, a missing route on an API gateway or a proxy in
 * front of the partner answer (`{"message":"Not Found"}`), and read as "the partner has no such payment"
 * any of them would prove a stuck intent `not_executed`, so that its charge is retried whether or not the
 * first one went through. Only the partner's own answer for an unknown reference proves that.
 */
export type NoSuchReferenceAnswer = { field: string; equals: string | number } | { emptyBody: true };

/** Whether a 404's body (undefined when it had none) is the partner's "no such reference". */
export function saysNoSuchReference(answer: NoSuchReferenceAnswer, body: JsonValue | undefined): boolean {
  if ('emptyBody' in answer) return body === undefined;
  if (body === undefined) return false;
  let value: unknown = body;
  for (const part of answer.field.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    value = (value as Record<string, unknown>)[part];
  }
  // A number must be a JSON number of that value, a string that very string: `"20404"` is not `20404`.
  if (typeof answer.equals === 'number')
    return value instanceof JsonNumber && new Decimal(value.source).equals(answer.equals);
  return value === answer.equals;
}

/** The answer as a config would write it, for messages. */
export function describeNoSuchReference(answer: NoSuchReferenceAnswer): string {
  return 'emptyBody' in answer ? 'an empty body' : `${answer.field} = ${JSON.stringify(answer.equals)}`;
}

/** What is wrong with a configured answer, each as text (for apiSourceConfigProblems). */
export function noSuchReferenceProblems(answer: unknown, where: string): string[] {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer))
    return [`${where} must be { field, equals } or { emptyBody: true }`];
  const a = answer as Record<string, unknown>;
  if ('emptyBody' in a) {
    if (a.emptyBody !== true || Object.keys(a).length !== 1)
      return [`${where} { emptyBody } must be exactly { emptyBody: true }`];
    return [];
  }
  const problems: string[] = [];
  if (typeof a.field !== 'string' || a.field === '' || a.field.split('.').some((part) => part === ''))
    problems.push(`${where}.field must be a dot path into the 404's JSON body, such as "error.code"`);
  if (typeof a.equals !== 'string' && !(typeof a.equals === 'number' && Number.isFinite(a.equals)))
    problems.push(
      `${where}.equals must be the string or number the partner puts there for an unknown reference`,
    );
  const extra = Object.keys(a).filter((key) => key !== 'field' && key !== 'equals');
  if (extra.length > 0) problems.push(`${where} has unknown keys: ${extra.join(', ')}`);
  return problems;
}
