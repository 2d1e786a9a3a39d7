/**
 * Orders report file names as a person numbers them: runs of digits by their value, the rest by code unit,
 * so `batch_9.csv` comes before `batch_10.csv` (Adyen numbers its settlement batches so). Files are applied
 * in this order, and a refund is tied to its payment only when the payment's file was read first: in plain
 * name order `batch_10` ran before `batch_9`, and its refunds of batch 9's payments stayed untied. Dated names
 * (`2026-11-28.csv`) keep the order they had. Equal values written differently (`07` and `7`) fall back to
 * code-unit order, so the order is total and the same on every machine.
 */
export function compareFileNames(a: string, b: string): number {
  const left = a.match(RUNS) ?? [];
  const right = b.match(RUNS) ?? [];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i];
    const y = right[i];
    if (x === y) continue;
    if (DIGITS.test(x) && DIGITS.test(y)) {
      const byValue = compareDigits(x, y);
      if (byValue !== 0) return byValue;
    }
    return x < y ? -1 : 1;
  }
  if (left.length !== right.length) return left.length - right.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

const RUNS = /\d+|\D+/g;
const DIGITS = /^\d/;

/** Two digit runs by value, without Number (a run may be longer than a double holds exactly). */
function compareDigits(x: string, y: string): number {
  const a = x.replace(/^0+(?=\d)/, '');
  const b = y.replace(/^0+(?=\d)/, '');
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
