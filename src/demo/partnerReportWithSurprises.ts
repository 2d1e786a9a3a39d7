import type { FakeExecution } from '../partnerFake/fakePartnerServer.js';

/**
 * The acquirer's settlement file for the day is what it executed, plus the kind of surprises real files
 * bring and that finance must see: one charge listed twice under two NSUs (the acquirer's own double
 * charge), one settled for a different amount, and one charge nobody here asked for.
 */
export function withPartnerSurprises(executions: readonly FakeExecution[], runTag: string): FakeExecution[] {
  const rows = [...executions];
  const [first, second] = executions;
  if (first)
    rows.push({
      ...first,
      id: `${first.id}-dup`,
      executedAt: new Date(Date.parse(first.executedAt) + 1_000).toISOString(),
    });
  if (second) {
    const index = rows.indexOf(second);
    rows[index] = { ...second, amount: addCents(second.amount, 150) };
  }
  rows.push({
    id: `${runTag}-unknown-1`,
    reference: `${runTag}-order-9999`,
    amount: '77.70',
    currency: 'BRL',
    executedAt: new Date().toISOString(),
  });
  return rows;
}

/** Adds cents to a decimal string with two fraction digits, without floating point. */
function addCents(amount: string, cents: number): string {
  const [integer, fraction = '00'] = amount.split('.');
  const total = BigInt(integer) * 100n + BigInt(fraction.padEnd(2, '0').slice(0, 2)) + BigInt(cents);
  return `${total / 100n}.${String(total % 100n).padStart(2, '0')}`;
}
