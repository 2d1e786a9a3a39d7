import { Client } from 'pg';
import { withDatabase } from './databaseUrl.js';

let counter = 0;
/**
 * Databases whose suites passed. They are dropped at the end of the run, not in the suite's `after`:
 * mocha runs `after` hooks in registration order, so dropping there would cut connections the suite's own
 * later hooks are still closing.
 */
export const databasesToDrop: string[] = [];

/** A database of the test run, cloned from the migrated template. */
export interface FreshDatabase {
  /** Connection string; valid from the suite's `before` hook on. */
  readonly url: string;
  readonly name: string;
}

/**
 * Call inside a `describe`: gives the suite its own database, cloned from the template in `before`.
 * It is dropped at the end of the run only when every test of the suite passed, so a failure leaves its
 * data behind to inspect (the name is printed).
 */
export function useFreshDatabase(label = 'suite'): FreshDatabase {
  const state = { url: '', name: '' };
  let failed = false;
  before(async () => {
    const adminUrl = requiredEnv('IL_TEST_ADMIN_URL');
    state.name = `il_${label
      .replace(/[^a-z0-9]/gi, '_')
      .toLowerCase()
      .slice(0, 30)}_${process.pid}_${++counter}`;
    await admin(adminUrl, `CREATE DATABASE ${state.name} TEMPLATE ${requiredEnv('IL_TEST_TEMPLATE')}`);
    state.url = withDatabase(adminUrl, state.name);
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(() => {
    if (!state.name) return;
    if (failed) console.log(`    kept database ${state.name} of a failed test for inspection`);
    else databasesToDrop.push(state.name);
  });
  return {
    get url() {
      return state.url;
    },
    get name() {
      return state.name;
    },
  };
}

export async function admin(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through mocha with test/support/setup`);
  return value;
}
