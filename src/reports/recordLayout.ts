/**
 * A CSV report whose records are of several types, told apart by a record-type column (PayPal's Settlement
 * Report: `RH`, `FH`, `SH`, `CH`, `SB`, `SF`, `SC`, `RF`, `RC`, `FF`). The column names come from one type
 * (`header`), rows from others (`data`); the rest are preamble, section headers and footers. Every record
 * type is named: a type the layout does not know is a rejected row, never skipped. Positions are 0-based
 * and count the record-type column itself (in `"SH",2026/11/30 ...`, the type is position 0 and the date
 * position 1), which must come first or at a fixed position since no column name is known before the header.
 *
 * E.g. PayPal: `{ header: 'CH', data: ['SB'], ignore: ['RH', 'FH', 'SF', 'RF'], coverage: { record: 'SH',
 * from: 1, to: 2 }, counts: [{ record: 'SC', position: 1, since: 'SH' }, { record: 'FF', position: 1 }],
 * end: 'FF' }`.
 */
export interface RecordLayout {
  /**
   * Position of the record type in every record.
   * @default 0
   */
  typeColumn?: number;
  /** The record type that holds the column names of the data records (PayPal's `CH`). It may repeat (one per section): each one replaces the names before it. */
  header: string;
  /** Record types that hold rows, read with the names of the last header record (PayPal's `SB`). */
  data: readonly string[];
  /**
   * Record types read past: report and file headers, totals (PayPal's `RH`, `FH`, `SF`, `RF`).
   * @default [] (none)
   */
  ignore?: readonly string[];
  /**
   * A record that declares the period the report is complete for (PayPal's section header `SH`): the
   * positions of its start and end, read with `dateFormat` (default: the source's `dateFormat`; times without
   * an offset in the reconciler's time zone). Used by a reconciler whose `coverage` is `{ fromReport: true }`;
   * a date that cannot be read fails the file.
   * @default undefined (the records declare no period)
   */
  coverage?: { record: string; from: number; to: number; dateFormat?: string };
  /**
   * Records that declare how many data records came before them (PayPal's `SC` per section, `RC` per
   * report, `FF` per file): the position of the count, and the record type the counting starts after
   * (`since`; default the start of the file). A count that disagrees with the data records read fails the
   * file, which then applies nothing: a file whose rows were cut or duplicated cannot be trusted for any row.
   * @default [] (no counts)
   */
  counts?: readonly { record: string; position: number; since?: string }[];
  /**
   * The record type that ends a complete file (PayPal's `FF`). A file that ends without it was cut short or
   * is partial and fails; a record after it fails too.
   * @default undefined (any last record)
   */
  end?: string;
}

/** Problems of a layout as configured, worded for the operator (empty when usable); `where` names it. */
export function recordLayoutProblems(layout: unknown, where: string): string[] {
  if (layout === undefined) return [];
  if (typeof layout !== 'object' || layout === null || Array.isArray(layout))
    return [`${where} must be an object`];
  const l = layout as Record<string, unknown>;
  const problems: string[] = [];
  const isType = (value: unknown) =>
    typeof value === 'string' && value.trim() !== '' && value === value.trim();
  const isPosition = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
  const typeColumn = l.typeColumn ?? 0;
  if (!isPosition(typeColumn)) problems.push(`${where}.typeColumn must be a position (a whole number >= 0)`);
  // Every type the layout names, with what it is, so that one type cannot mean two things.
  const named: [string, string][] = [];
  if (!isType(l.header)) problems.push(`${where}.header must be a record type such as "CH"`);
  else named.push([l.header as string, 'header']);
  if (!Array.isArray(l.data) || l.data.length === 0 || !l.data.every(isType)) {
    problems.push(`${where}.data must list the record types that hold rows, such as ["SB"]`);
  } else for (const type of l.data) named.push([type, 'data']);
  if (l.ignore !== undefined) {
    if (!Array.isArray(l.ignore) || !l.ignore.every(isType)) {
      problems.push(`${where}.ignore must be a list of record types`);
    } else for (const type of l.ignore) named.push([type, 'ignore']);
  }
  const position = (value: unknown, name: string) => {
    if (!isPosition(value)) problems.push(`${name} must be a position (a whole number >= 0)`);
    else if (value === typeColumn) problems.push(`${name} is the position of the record type`);
  };
  if (l.coverage !== undefined) {
    const c = l.coverage as Record<string, unknown> | null;
    if (typeof c !== 'object' || c === null) {
      problems.push(`${where}.coverage must be { record, from, to, dateFormat? }`);
    } else {
      if (!isType(c.record)) problems.push(`${where}.coverage.record must be a record type such as "SH"`);
      else named.push([c.record as string, 'coverage']);
      position(c.from, `${where}.coverage.from`);
      position(c.to, `${where}.coverage.to`);
      if (c.dateFormat !== undefined && (typeof c.dateFormat !== 'string' || c.dateFormat.trim() === '')) {
        problems.push(`${where}.coverage.dateFormat must be a Luxon format (leave it out for the source's)`);
      }
    }
  }
  const counts = l.counts ?? [];
  if (!Array.isArray(counts)) problems.push(`${where}.counts must be a list of { record, position, since? }`);
  else {
    counts.forEach((count: Record<string, unknown> | null, index) => {
      const at = `${where}.counts[${index}]`;
      if (typeof count !== 'object' || count === null) {
        problems.push(`${at} must be { record, position, since? }`);
        return;
      }
      if (!isType(count.record)) problems.push(`${at}.record must be a record type such as "SC"`);
      else named.push([count.record as string, 'counts']);
      position(count.position, `${at}.position`);
      if (count.since !== undefined && !isType(count.since))
        problems.push(`${at}.since must be a record type`);
    });
  }
  if (l.end !== undefined) {
    if (!isType(l.end)) problems.push(`${where}.end must be a record type such as "FF"`);
    // The end record may also carry a count (PayPal's FF): that is the one type allowed to be named twice.
    else if (!named.some(([type, role]) => type === l.end && role === 'counts'))
      named.push([l.end as string, 'end']);
  }
  const seen = new Map<string, string>();
  for (const [type, role] of named) {
    const before = seen.get(type);
    if (before !== undefined)
      problems.push(`${where}: record type ${JSON.stringify(type)} is both ${before} and ${role}`);
    else seen.set(type, role);
  }
  if (Array.isArray(counts)) {
    for (const count of counts as Record<string, unknown>[]) {
      if (isType(count?.since) && !seen.has(count.since as string)) {
        problems.push(
          `${where}.counts: since ${JSON.stringify(count.since)} is not a record type of the layout`,
        );
      }
    }
  }
  return problems;
}
