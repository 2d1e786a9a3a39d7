/**
 * Which statement a claim sends first: the claim itself (insert, and read the key only when it is taken), or
 * a plain read of the key, then the claim only when the key is not there.
 *
 * - `insert-first`: a new key is one statement; a duplicate delivery is one statement too, but one that
 *   plans and starts an insert (every index of `intents` opened and locked, an identity value drawn) before
 *   it finds the key taken.
 * - `read-first`: a duplicate delivery of a settled key is one prepared SELECT; a new key pays that SELECT
 *   before its claim, a round trip more.
 * - `adaptive` (the default): `read-first` while more than half of this ledger's recent claims were
 *   duplicates the key's row alone answered, of a settled key or with another payload (a redelivery storm:
 *   a consumer restarted, a broker re-sent its unacknowledged messages), `insert-first` otherwise. Measured
 *   (bench/ledgerMixed.ts), the two orders cost about the same at half such duplicates: below, the SELECT
 *   every new key pays outweighs what the duplicates save; above, the other way round (docs/PERFORMANCE.md,
 *   "Replay"). A duplicate of an intent still in flight or of unknown outcome counts as a new key does: it
 *   goes on to the claim in either order, so the read first costs it a round trip and saves it nothing.
 *
 * Either order is equally correct: the claim's statements decide under the unique index whatever the read
 * saw, and what the read returns is trusted only for what cannot change (ledger.ts). The choice moves cost,
 * never an outcome; it is per ledger instance, since a process knows only its own deliveries.
 */
export type ClaimOrderMode = 'adaptive' | 'insert-first' | 'read-first';

/** How much one claim moves the recent share of answered duplicates: about the last 64 claims count. */
const DECAY = 1 / 64;

export class ClaimOrder {
  /** Exponentially decayed share of recent claims that the key's row alone answered. */
  private duplicateShare = 0;

  constructor(private readonly mode: ClaimOrderMode) {}

  /** Whether the next claim reads the key first. */
  readFirst(): boolean {
    if (this.mode === 'adaptive') return this.duplicateShare > 0.5;
    return this.mode === 'read-first';
  }

  /**
   * What a claim's first statement found: a row that alone answers the delivery (`true`: a settled key or
   * another payload, what a read first would have answered), or no row or one the claim must go on to.
   */
  observe(answeredByRow: boolean): void {
    this.duplicateShare += ((answeredByRow ? 1 : 0) - this.duplicateShare) * DECAY;
  }
}
