import type { Logger } from '../logger.js';
import type { Queryable } from '../sql/queryable.js';

/** work_mem of a run's transaction: a 1M-row report sorts and hashes in memory at this size. */
export const RUN_WORK_MEM = '64MB';

/**
 * temp_buffers of a run's session: the memory its temp tables (rec_report, rec_match, rec_intents, ...)
 * are kept in. At PostgreSQL's default of 8 MB every one of them goes through the operating system's files
 * as soon as it is written; a 1M-row report's tables are 50-150 MB each. Taken only as they are used, and
 * only by the one session that runs a partner.
 */
export const RUN_TEMP_BUFFERS = '256MB';

/**
 * Gives the run's session {@link RUN_TEMP_BUFFERS}, before its transaction. PostgreSQL refuses to change
 * temp_buffers once a session has used temp tables at another size (a pooled connection something else
 * used first): the run then goes on at that size, the same run, only slower.
 */
export async function useRunTempBuffers(db: Queryable, log: Logger): Promise<void> {
  try {
    await db.query(`SET temp_buffers = '${RUN_TEMP_BUFFERS}'`);
  } catch (error) {
    log.debug({ error: (error as Error).message }, 'temp_buffers unchanged on this connection');
  }
}
