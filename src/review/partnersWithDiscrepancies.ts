import type { Queryable } from '../database/queryable.js';

const CACHE_MS = 30_000;
const MAX_PARTNERS = 500;
const cache = new WeakMap<Queryable, { at: number; partners: string[] }>();

/**
 * Partners that have discrepancies, for the list's partner filter. Cached per pool for 30 s: the choice
 * list may lag a new partner by that much, the list itself never does.
 */
export async function partnersWithDiscrepancies(db: Queryable): Promise<string[]> {
  const cached = cache.get(db);
  if (cached && Date.now() - cached.at < CACHE_MS) return cached.partners;
  const result = await db.query<{ partner: string }>(
    'SELECT DISTINCT partner FROM discrepancies ORDER BY partner LIMIT $1',
    [MAX_PARTNERS],
  );
  const partners = result.rows.map((row) => row.partner);
  cache.set(db, { at: Date.now(), partners });
  return partners;
}
