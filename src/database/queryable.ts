import type { QueryConfig, QueryResult, QueryResultRow } from 'pg';

/** A pg pool or a checked-out client: the runtime SQL functions take either. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/**
 * Same, for the hot-path statements sent as named (prepared) statements: PostgreSQL parses and plans them
 * once per connection instead of on every call (see src/ledger/sql/claimIntent.ts and docs/PERFORMANCE.md for the figures).
 */
export interface PreparedQueryable {
  query<R extends QueryResultRow = QueryResultRow>(config: QueryConfig): Promise<QueryResult<R>>;
}
