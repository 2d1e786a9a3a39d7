import { randomUUID } from 'node:crypto';

// JSON that keeps the exact text of its numbers

/** A JSON number as the partner wrote it, e.g. `12.50` or `123456789012345678901`. */
export class JsonNumber {
  constructor(readonly source: string) {}
}

export type JsonValue = string | boolean | null | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const NUMBER_CHAR = /[-+.\deE]/;
const JSON_WHITESPACE = /[ \t\n\r]/;

/**
 * `JSON.parse`, except that numbers come back as {@link JsonNumber} holding their source text.
 *
 * Why: `JSON.parse` turns `0.10000000000000001` into the double `0.1` and `123456789012345678` (a typical
 * NSU) into `123456789012345680`, silently. Node 20 has no `context.source` in the reviver, so before
 * parsing, every number token outside a string is rewritten into a string carrying a random marker, and
 * the reviver turns those strings back into `JsonNumber`s. The rewrite cannot make invalid JSON valid:
 * number tokens are checked against the JSON grammar, and one followed by `:` (a string there would be an
 * object key) is refused. A partner cannot forge the marker: it is random per call.
 */
export function parseJsonKeepingNumbers(text: string): JsonValue {
  const marker = `\u0000${randomUUID()}:`;
  let rewritten = '';
  let copiedUpTo = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(text);
      const end = i + (match?.[0].length ?? 0);
      if (!match || (end < text.length && NUMBER_CHAR.test(text[end]))) {
        throw new SyntaxError(`invalid number at position ${i}`);
      }
      let after = end;
      while (after < text.length && JSON_WHITESPACE.test(text[after])) after += 1;
      if (text[after] === ':') throw new SyntaxError(`unexpected number at position ${i}`);
      rewritten += text.slice(copiedUpTo, i) + JSON.stringify(marker + match[0]);
      copiedUpTo = end;
      i = end;
      continue;
    }
    i += 1;
  }
  rewritten += text.slice(copiedUpTo);
  return JSON.parse(rewritten, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(marker)
      ? new JsonNumber(value.slice(marker.length))
      : value,
  ) as JsonValue;
}

export function isJsonObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber)
  );
}

/** Follows a dot path (`result.items`, `amount.value`; `''` is the value itself); undefined when absent. */
export function getPath(value: JsonValue, path: string): JsonValue | undefined {
  if (path === '') return value;
  let current: JsonValue | undefined = value;
  for (const step of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(step)) current = current[Number(step)];
    else if (isJsonObject(current) && Object.hasOwn(current, step)) current = current[step];
    else return undefined;
  }
  return current;
}

/**
 * Where `path` cannot be followed because a value on the way is there but is not an object or array (a
 * string where `order.id` expects `order` to be an object): the step's path and what was found. Undefined
 * when the path can be followed, or ends at a key that is absent or null, which is the partner sending
 * nothing there rather than something in a shape we cannot read.
 */
export function pathBlocked(value: JsonValue, path: string): { at: string; found: JsonValue } | undefined {
  if (path === '') return undefined;
  let current: JsonValue | undefined = value;
  const steps = path.split('.');
  for (const [index, step] of steps.entries()) {
    if (current === undefined || current === null) return undefined;
    if (Array.isArray(current) && /^\d+$/.test(step)) current = current[Number(step)];
    else if (isJsonObject(current)) current = Object.hasOwn(current, step) ? current[step] : undefined;
    else return { at: steps.slice(0, index).join('.'), found: current };
  }
  return undefined;
}

/** "a string", "an object"... for messages a person reads. */
export function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (value instanceof JsonNumber) return 'a number';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
