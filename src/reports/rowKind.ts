/**
 * What a report row says happened (docs/DESIGN.md, "Row kinds"):
 * - `execution`: a sale, a charge, a message sent; the only kind that completes an intent, matches one, or
 *   counts toward a duplicate;
 * - `reversal`: a refund, a chargeback, a reversal of either; tied to the execution it reverses, never a
 *   second execution;
 * - `failed`: the partner says this try did not execute (a declined sale, an undelivered message);
 * - `ignored`: fees, payouts, batch totals, inbound messages: counted, nothing else.
 */
export type RowKind = 'execution' | 'reversal' | 'failed' | 'ignored';

const ROW_KINDS: readonly RowKind[] = ['execution', 'reversal', 'failed', 'ignored'];

/**
 * How a source tells a row's kind, from one or more of its columns (CSV header names, or dot paths into an
 * API item). Without a rule every row is an execution, as before row kinds existed.
 *
 * A value table: `{ column: 'Type', values: { Settled: 'execution', Refunded: 'reversal', Fee: 'ignored' } }`
 * (values compared exactly, after trimming). A function, for codes a table would spell out at length
 * (PayPal's T-codes): `{ columns: ['status', 'direction'], classify: ({ status, direction }) => ... }`,
 * receiving each column's trimmed text (`''` when empty or absent) and returning a kind, or `undefined`
 * when it does not know the combination. Either way a value the rule does not know rejects the row (its
 * line, the column and the value): a kind is never guessed. A function that knows which of its columns is
 * at fault (Cielo's sign, which contradicts the kind its other columns say) returns a {@link KindRejection}
 * naming it, and the rejection names that column instead of the first.
 */
export type RowKindRule =
  | { column: string; values: Record<string, RowKind> }
  | {
      columns: readonly string[];
      classify: (values: Readonly<Record<string, string>>) => RowKind | KindRejection | undefined;
    };

/** A classify function's answer that the row is rejected, naming the column at fault (one of its columns). */
export interface KindRejection {
  reject: string;
  reason: string;
}

/** The columns a rule reads, in the order given. */
export function kindColumns(rule: RowKindRule): readonly string[] {
  return 'column' in rule ? [rule.column] : rule.columns;
}

/**
 * Problems of a rule as configured (empty when it is usable), worded for the operator; `where` names it
 * (e.g. `source.kind`).
 */
export function rowKindRuleProblems(rule: unknown, where: string): string[] {
  if (typeof rule !== 'object' || rule === null) return [`${where} must be an object`];
  const candidate = rule as Record<string, unknown>;
  if ('column' in candidate) {
    const problems: string[] = [];
    if (typeof candidate.column !== 'string' || candidate.column.trim() === '') {
      problems.push(`${where}.column must be a non-empty column name`);
    }
    const values = candidate.values;
    if (typeof values !== 'object' || values === null || Object.keys(values).length === 0) {
      problems.push(`${where}.values must map at least one value to a row kind`);
    } else {
      for (const [value, kind] of Object.entries(values)) {
        if (!(ROW_KINDS as readonly unknown[]).includes(kind)) {
          problems.push(
            `${where}.values[${JSON.stringify(value)}] must be one of ${ROW_KINDS.join(', ')}, got ${JSON.stringify(kind)}`,
          );
        }
      }
    }
    return problems;
  }
  if ('columns' in candidate) {
    const problems: string[] = [];
    const columns = candidate.columns;
    if (
      !Array.isArray(columns) ||
      columns.length === 0 ||
      columns.some((column) => typeof column !== 'string' || column.trim() === '')
    ) {
      problems.push(`${where}.columns must be a non-empty list of column names`);
    }
    if (typeof candidate.classify !== 'function') problems.push(`${where}.classify must be a function`);
    return problems;
  }
  return [`${where} needs either { column, values } or { columns, classify }`];
}

export type KindResult = { ok: true; kind: RowKind } | { ok: false; field: string; reason: string };

/**
 * The kind of one row from the texts of the rule's columns (same order as {@link kindColumns}). A value
 * the rule does not know, or a function that throws or answers something else than a kind, is a rejection
 * naming the (first) column.
 */
export function classifyRow(rule: RowKindRule, texts: readonly string[]): KindResult {
  if ('column' in rule) {
    const text = texts[0] ?? '';
    const kind = Object.hasOwn(rule.values, text) ? rule.values[text] : undefined;
    if (kind !== undefined) return { ok: true, kind };
    const known = Object.keys(rule.values);
    const listed = known.slice(0, LISTED_VALUES).join(', ');
    const more = known.length > LISTED_VALUES ? ` and ${known.length - LISTED_VALUES} more` : '';
    return {
      ok: false,
      field: rule.column,
      reason: `${quote(text)} is not a known ${rule.column} (known: ${listed}${more}); the row's kind is not guessed`,
    };
  }
  const values: Record<string, string> = {};
  rule.columns.forEach((column, index) => {
    values[column] = texts[index] ?? '';
  });
  let kind: unknown;
  try {
    kind = rule.classify(values);
  } catch (error) {
    return {
      ok: false,
      field: rule.columns[0]!,
      reason: `the reconciler's classify failed on ${describeValues(values)}: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if ((ROW_KINDS as readonly unknown[]).includes(kind)) return { ok: true, kind: kind as RowKind };
  if (isKindRejection(kind, rule.columns)) {
    return { ok: false, field: kind.reject, reason: `${describeValues(values)}: ${kind.reason}` };
  }
  return {
    ok: false,
    field: rule.columns[0]!,
    reason: `${describeValues(values)} is not a known kind of row; the row's kind is not guessed`,
  };
}

function isKindRejection(answer: unknown, columns: readonly string[]): answer is KindRejection {
  if (typeof answer !== 'object' || answer === null) return false;
  const { reject, reason } = answer as Record<string, unknown>;
  return typeof reject === 'string' && columns.includes(reject) && typeof reason === 'string';
}

function describeValues(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([column, text]) => `${column} ${quote(text)}`)
    .join(', ');
}

/** Known values a rejection lists; reasons stay short enough to read in a table (and a log line). */
const LISTED_VALUES = 6;
/** A value is quoted up to this many characters: a garbled cell cannot flood the reason. */
const QUOTED_CHARS = 40;

function quote(text: string): string {
  if (text.length <= QUOTED_CHARS) return JSON.stringify(text);
  return JSON.stringify(`${Array.from(text).slice(0, QUOTED_CHARS).join('')}…`);
}
