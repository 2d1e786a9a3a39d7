import type { Queryable } from '../database/queryable.js';

/**
 * What is wrong with a `match.shape` (MatchRule), or undefined. It must be a regular expression anchored at
 * both ends: unanchored, `\+[0-9]+` would pass `call +5511...` too, and an intent whose value the partner can
 * never echo would be proven absent. It is evaluated by PostgreSQL (`~`), and checked here with JavaScript's
 * parser, which refuses what the two dialects would most likely read differently.
 */
export function shapeProblem(shape: unknown): string | undefined {
  if (typeof shape !== 'string' || !shape.startsWith('^') || !shape.endsWith('$'))
    return `match.shape must be a regular expression anchored at both ends ("^...$"), got ${JSON.stringify(shape)}`;
  try {
    new RegExp(shape, 'u');
  } catch (error) {
    return `match.shape is not a regular expression: ${(error as Error).message}`;
  }
  return undefined;
}

/**
 * The run's warning about its stuck intents whose matched value is outside `shape` (`rec_intents`,
 * collectCandidates), or null when there are none: the partner can never list them as they are written, so
 * none of them is proven absent (collectCandidates leaves them out), and the caller should fix what it
 * records.
 */
export async function outOfShapeWarning(
  db: Queryable,
  match: { by: 'reference' | 'partnerReference'; shape: string },
): Promise<string | null> {
  const column = match.by === 'reference' ? 'reference' : 'partner_reference';
  const result = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM rec_intents
      WHERE role = 'stuck' AND ${column} IS NOT NULL AND ${column} !~ $1`,
    [match.shape],
  );
  const count = result.rows[0].n;
  if (count === 0) return null;
  const field = match.by === 'reference' ? 'reference' : 'partner reference';
  return (
    `${count} stuck intents have a ${field} this partner never reports in that form ` +
    `(match.shape ${match.shape}): none of them can be proven absent; record the value as the partner writes it`
  );
}
