import { ReviewUserError } from '../../review/errors/ReviewUserError.js';
import { addReviewUser, listReviewUsers, REVIEW_ROLES, revokeReviewUser } from '../../review/reviewUsers.js';
import { UsageError } from '../errors/UsageError.js';
import { openCliDatabase } from '../openCliDatabase.js';
import { parseStrict } from './discrepancyArgs.js';

export const usersUsage =
  'intent-ledger users add <name> --role viewer|resolver|admin | users list | users revoke <name>   ' +
  "the review site's people and their personal tokens";

/**
 * `intent-ledger users`: the review site's people. `add` prints the new person's personal token once (only
 * its salted scrypt hash is stored: lose it and revoke and add again); `list` shows everyone with their role
 * and whether they were revoked; `revoke` stops a token at once, open sessions included. Exit 1 when the
 * change is refused (a name taken, an unknown person), 2 on usage errors.
 */
export async function usersCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseStrict({
    args,
    options: { role: { type: 'string' } },
    allowPositionals: true,
  });
  const [verb, name, ...rest] = positionals;
  if (rest.length) throw new UsageError(`users ${verb}: unexpected ${rest.join(' ')}`);
  if (verb === 'add') {
    if (!name) throw new UsageError('users add needs a name');
    if (!values.role) throw new UsageError(`users add needs --role ${REVIEW_ROLES.join('|')}`);
  } else if (verb === 'revoke') {
    if (!name) throw new UsageError('users revoke needs a name');
  } else if (verb !== 'list') throw new UsageError('users takes add, list or revoke');
  if (verb !== 'add' && values.role !== undefined) throw new UsageError('--role applies to users add only');

  const database = await openCliDatabase();
  try {
    if (verb === 'add') {
      const token = await addReviewUser(database.pool, name, values.role as string);
      console.log(`added ${name} (${values.role}). Their personal token, shown this once:`);
      console.log(token);
    } else if (verb === 'revoke') {
      const changed = await revokeReviewUser(database.pool, name);
      console.log(
        changed ? `revoked ${name}: their token and sessions stop now` : `${name} was already revoked`,
      );
    } else {
      for (const user of await listReviewUsers(database.pool))
        console.log(
          `${user.name}\t${user.role}\tadded ${user.createdAt.toISOString()}` +
            (user.revokedAt ? `\trevoked ${user.revokedAt.toISOString()}` : ''),
        );
    }
    return 0;
  } catch (error) {
    if (error instanceof ReviewUserError) {
      console.error(`users ${verb}: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    await database.close();
  }
}
