import type { QueryResult, QueryResultRow } from 'pg';

/** A pg pool or a checked-out client: the runtime SQL functions take either. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}
