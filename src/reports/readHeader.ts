import { conventionColumns } from './amountConvention.js';
import { CSV_FIELDS, type CsvField, type ResolvedCsvSourceConfig } from './csvSourceConfig.js';
import { ReportFormatError } from './errors/ReportFormatError.js';
import { kindColumns } from './rowKind.js';

interface MappedColumn {
  field: CsvField;
  /** The header name in the file, used as `field` of rejections. */
  name: string;
  index: number;
}

export interface HeaderLayout {
  width: number;
  /** Mapped columns in the order of {@link CSV_FIELDS}, which is the order rows are checked in. */
  columns: MappedColumn[];
  byField: Partial<Record<CsvField, MappedColumn>>;
  /** Positions of the columns the row-kind rule reads, in the rule's order (empty without a rule). */
  kindIndexes: number[];
  /** Positions of the amount convention's columns: sign indicator, or debit then credit (see conventionColumns). */
  amountIndexes: number[];
}

export function readHeader(
  names: string[],
  raw: string,
  settings: ResolvedCsvSourceConfig,
  file: string,
  line: number,
): HeaderLayout {
  if (names.length === 1 && names[0] === '' && /^[\r\n]*$/.test(raw)) {
    throw new ReportFormatError(
      `${file}: header line ${line} is empty (is skipLines = ${settings.skipLines} right?)`,
      { file, line },
    );
  }
  const found = names.map((name) => (name === '' ? '""' : name)).join(', ');
  const missing: string[] = [];
  const missingNames: string[] = [];
  const columns: MappedColumn[] = [];
  const byField: Partial<Record<CsvField, MappedColumn>> = {};
  for (const field of CSV_FIELDS) {
    const name = settings.columns[field];
    if (name === undefined) continue;
    const index = names.indexOf(name);
    if (index === -1) {
      missing.push(`"${name}" (${field})`);
      missingNames.push(name);
      continue;
    }
    refuseTwice(names, name, field, { file, line, found });
    const column = { field, name, index };
    columns.push(column);
    byField[field] = column;
  }
  const kindIndexes: number[] = [];
  for (const name of settings.kind ? kindColumns(settings.kind) : []) {
    const index = names.indexOf(name);
    if (index === -1) {
      missing.push(`"${name}" (kind)`);
      missingNames.push(name);
      continue;
    }
    refuseTwice(names, name, 'kind', { file, line, found });
    kindIndexes.push(index);
  }
  const amountIndexes: number[] = [];
  for (const name of conventionColumns(settings.amount)) {
    const index = names.indexOf(name);
    if (index === -1) {
      missing.push(`"${name}" (amount)`);
      missingNames.push(name);
      continue;
    }
    refuseTwice(names, name, 'amount', { file, line, found });
    amountIndexes.push(index);
  }
  if (missing.length > 0) {
    const subject = missing.length === 1 ? 'column' : 'columns';
    throw new ReportFormatError(
      `${file}: ${subject} ${missing.join(', ')} not found in header; found: ${found}`,
      { file, line, field: missingNames.join(', ') },
    );
  }
  return { width: names.length, columns, byField, kindIndexes, amountIndexes };
}

/**
 * Throws when the header names a column the rows are read by more than once: picking one of the two would be
 * a guess about which one the partner meant. The same for the columns of the kind rule and of the amount
 * convention as for the mapped ones: a refund whose kind is in the second `Type` column read by the first is
 * an execution, a false duplicate.
 */
function refuseTwice(
  names: readonly string[],
  name: string,
  what: string,
  where: { file: string; line: number; found: string },
): void {
  const count = names.filter((candidate) => candidate === name).length;
  if (count > 1) {
    throw new ReportFormatError(
      `${where.file}: column "${name}" (${what}) appears ${count} times in header; found: ${where.found}`,
      { file: where.file, line: where.line, field: name },
    );
  }
}
