import type { ReconcilerConfig } from '../../../src/reconcile/reconcilerConfig.js';
import { place, spec, unknownIntent, useReconcileFixture } from '../support.js';

/**
 * What each file-based shipped partner's test needs: a fresh database, the shipped reconciler pointed at a
 * fixture file (with a deadline no intent of the fixture reaches, so the outcomes do not age), and stuck
 * intents created through the public API, placed at the time their attempt started. Call inside `describe`.
 */
export function useShippedPartner(options: {
  name: string;
  reconciler: ReconcilerConfig;
  fixture: string;
  currency: string;
  /** @default '30d' */
  deadline?: string;
  /** The merchant account(s) the reports must state (`source.account.values`), for a reconciler that checks it. */
  accounts?: string[];
}) {
  const fx = useReconcileFixture(`rec_${options.name}`);

  /** The shipped reconciler under another partner name (one per test), reading `file`. */
  function config(partner: string, file = options.fixture): ReconcilerConfig {
    return {
      ...options.reconciler,
      partner,
      deadline: options.deadline ?? '30d',
      source: withAccounts(
        { ...options.reconciler.source, path: file } as ReconcilerConfig['source'],
        options.accounts,
      ),
    };
  }

  /** An intent whose outcome is unknown, its attempt started at `at`. */
  async function stuck(partner: string, ref: string, amount: string, at: string): Promise<string> {
    const id = await unknownIntent(fx.ledger, spec(partner, ref, { amount, currency: options.currency }));
    await place(fx.sql, id, { startedAt: new Date(at) });
    return id;
  }

  return { fx, config, stuck };
}

/** The source, expecting `accounts` instead of what its `account.env` holds. */
function withAccounts(source: ReconcilerConfig['source'], accounts: string[] | undefined) {
  if (accounts === undefined || source.type !== 'csv' || source.account === undefined) return source;
  const { env: _, ...where } = source.account;
  return { ...source, account: { ...where, values: accounts } };
}
