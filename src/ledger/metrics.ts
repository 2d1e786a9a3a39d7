import { Counter, type Registry } from 'prom-client';

/**
 * Counters of what the ledger prevented and refused. They are created unregistered so several ledgers
 * (tests, multi-tenant processes) never clash on metric names; register them where you expose metrics:
 * `ledger.metrics.registerWith(registry)`.
 */
export class LedgerMetrics {
  readonly claims = counter('intent_ledger_claims_total', 'Attempts claimed (partner calls allowed).');
  readonly replays = counter('intent_ledger_replays_total', 'Duplicates suppressed: stored result replayed.');
  readonly conflicts = counter('intent_ledger_key_conflicts_total', 'Same key, different payload.');
  readonly inFlightRefusals = counter(
    'intent_ledger_in_flight_refusals_total',
    'Refused: another attempt holds the lease.',
  );
  readonly unknownOutcomes = counter(
    'intent_ledger_unknown_outcomes_total',
    'Calls whose outcome is unknown, or refused because it is.',
  );

  registerWith(registry: Registry): void {
    for (const metric of [
      this.claims,
      this.replays,
      this.conflicts,
      this.inFlightRefusals,
      this.unknownOutcomes,
    ]) {
      registry.registerMetric(metric);
    }
  }
}

function counter(name: string, help: string): Counter<'partner'> {
  return new Counter({ name, help, labelNames: ['partner'], registers: [] });
}
