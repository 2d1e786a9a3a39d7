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
 * How many of this run's stuck intents have a matched value outside `shape` (`rec_intents`, collectCandidates):
 * the partner can never list them as they are written, so none of them is proven absent (collectCandidates
 * leaves them out); the run's warnings say how many, so the caller can fix what it records.
 */
export async function stuckOutOfShape(
  db: Queryable,
  match: { by: 'reference' | 'partnerReference'; shape: string },
): Promise<number> {
  const column = match.by === 'reference' ? 'reference' : 'partner_reference';
  const result = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM rec_intents
      WHERE role = 'stuck' AND ${column} IS NOT NULL AND ${column} !~ $1`,
    [match.shape],
  );
  return result.rows[0].n;
}
