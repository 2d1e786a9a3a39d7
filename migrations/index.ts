import { IntentLedger1000000000001 } from './0001-intent-ledger.js';

/** Every migration, in order. A new migration is a new numbered file plus one line here. */
export const migrations = [IntentLedger1000000000001];
