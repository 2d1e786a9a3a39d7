import type { IntentSpec, PartnerCall, RunResult } from '../shared/types.js';

/** The part of the ledger a workflow needs. */
export interface StepRunner {
  run(spec: IntentSpec, call: PartnerCall): Promise<RunResult>;
}

/**
 * A multi-step process (reserve stock, capture payment, book delivery) where each step is its own intent
 * keyed `${key}:${name}`. Running the workflow again after a crash replays the finished steps without
 * calling their partners and continues from the first unfinished one: just call the steps again, in order.
 */
export class Workflow {
  constructor(
    private readonly ledger: StepRunner,
    /** The workflow's stable key, e.g. `order-123`. */
    readonly key: string,
  ) {
    if (!key) throw new TypeError('workflow key must be a non-empty string');
  }

  /** Runs (or replays) step `name`. */
  step(name: string, spec: Omit<IntentSpec, 'key'>, call: PartnerCall): Promise<RunResult> {
    // Without ':' in step names, `${key}:${name}` is unambiguous: workflow 'a:b' step 'c' and workflow 'a'
    // step 'b:c' would otherwise be the same intent.
    if (!name || name.includes(':'))
      throw new TypeError(
        `workflow step name must be a non-empty string without ':' (got ${JSON.stringify(name)})`,
      );
    return this.ledger.run({ ...spec, key: `${this.key}:${name}` }, call);
  }
}
