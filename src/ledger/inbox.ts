import type { DataSource, EntityManager } from 'typeorm';

/** Result of {@link runInInbox}. */
export type InboxResult<T> = { duplicate: true } | { duplicate: false; result: T };

/**
 * Runs a local effect at most once per (consumer, message id): the inbox row and the effect commit or roll
 * back together. A concurrent duplicate blocks on the primary key until the first transaction ends, then
 * either sees the row (duplicate) or, if the first rolled back, runs the effect itself.
 */
export async function runInInbox<T>(
  dataSource: DataSource,
  consumer: string,
  messageId: string,
  effect: (manager: EntityManager) => Promise<T>,
): Promise<InboxResult<T>> {
  if (!consumer || !messageId) throw new TypeError('inbox: consumer and messageId must be non-empty strings');
  return dataSource.transaction(async (manager): Promise<InboxResult<T>> => {
    const inserted: unknown[] = await manager.query(
      'INSERT INTO inbox (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1',
      [consumer, messageId],
    );
    if (inserted.length === 0) return { duplicate: true };
    return { duplicate: false, result: await effect(manager) };
  });
}
