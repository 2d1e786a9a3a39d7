/**
 * Which merchant account a report must be of (CsvSourceConfig.account). A second account's file in the
 * reports folder (another shop of the company, a sandbox, a file dropped in the wrong place) with one order
 * number in common looks plausible, and a report that proves absence (PayPal's SH coverage) would then prove
 * every other stuck intent of ours not executed: one second charge each. So a source names where its
 * reports state their account, and the values it must hold; a report stating any other fails the run.
 */
export interface ReportAccount {
  /** The column holding the account on every row (Adyen's `Merchant Account`). */
  column?: string;
  /** In a `records` layout: the record type stating the account (PayPal's `SH`), with `position`. */
  record?: string;
  /** The field of `record` holding it (0-based, the record type being position 0). */
  position?: number;
  /**
   * Environment variable holding the expected account (several: separated by commas), read when the run
   * starts, e.g. `PAYPAL_ACCOUNT_ID`. Unset or empty: the account is not checked, the run says so in its
   * warnings and proves no intent absent.
   */
  env?: string;
  /** The expected account(s), instead of `env`. */
  values?: string[];
}

/** Everything wrong with an `account` setting, as `account...: problem` texts. */
export function reportAccountProblems(account: unknown, hasRecords: boolean): string[] {
  if (account === undefined) return [];
  if (typeof account !== 'object' || account === null || Array.isArray(account)) {
    return ['account must be { column, env } or { record, position, env } (or values instead of env)'];
  }
  const { column, record, position, env, values } = account as ReportAccount;
  const problems: string[] = [];
  if ((column === undefined) === (record === undefined)) {
    problems.push(
      'account must name exactly one of column (a column of every row) and record (with position)',
    );
  }
  if (column !== undefined && (typeof column !== 'string' || column.trim() === ''))
    problems.push(`account.column must be a header name, got ${JSON.stringify(column)}`);
  if (record !== undefined) {
    if (typeof record !== 'string' || record.trim() === '')
      problems.push(`account.record must be a record type, got ${JSON.stringify(record)}`);
    if (!hasRecords) problems.push('account.record needs a records layout (source.records)');
    if (typeof position !== 'number' || !Number.isSafeInteger(position) || position < 1)
      problems.push(`account.position must be a field position >= 1, got ${JSON.stringify(position)}`);
  } else if (position !== undefined) problems.push('account.position goes with account.record');
  if ((env === undefined) === (values === undefined))
    problems.push('account must name exactly one of env (an environment variable) and values');
  if (env !== undefined && (typeof env !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(env)))
    problems.push(`account.env must name an environment variable, got ${JSON.stringify(env)}`);
  if (
    values !== undefined &&
    (!Array.isArray(values) ||
      values.length === 0 ||
      values.some((value) => typeof value !== 'string' || value.trim() === ''))
  )
    problems.push('account.values must be a non-empty list of account ids');
  return problems;
}

/** The accounts a report must state, or null when none is configured (the env variable unset or empty). */
export function expectedAccounts(account: ReportAccount, env: NodeJS.ProcessEnv): string[] | null {
  const listed = account.values ?? (env[account.env!] ?? '').split(',');
  const accounts = listed.map((value) => value.trim()).filter((value) => value !== '');
  return accounts.length > 0 ? accounts : null;
}
