import { ReportFormatError } from './errors/ReportFormatError.js';
import type { ReportAccount } from './reportAccount.js';

/**
 * Checks, as a CSV report is read, that it is of the merchant account(s) the reconciler reads
 * (CsvSourceConfig.account). A report of another account fails the run: one order number in common with
 * ours makes it look plausible, and a report that proves absence would prove every other stuck intent not
 * executed. Either every row states it (a column: Adyen's `Merchant Account`), or a record does for the rows
 * after it (PayPal's `SH`): then a row before any such record fails too, since it says nothing about whose
 * it is.
 */
export class CsvAccountCheck {
  /** Position of the account column in the current header (a column account). */
  private columnIndex: number | undefined;
  /** A record account was read and checked before the rows that follow it. */
  private stated = false;

  constructor(
    private readonly account: ReportAccount,
    private readonly accounts: readonly string[],
    private readonly file: string,
    /** Where a records layout keeps each record's type. */
    private readonly typeColumn: number,
  ) {}

  /** A header just read: where its account column is (a column account). */
  header(cells: string[], line: number): void {
    const column = this.account.column;
    if (column === undefined) return;
    const index = cells.findIndex((name) => name.trim() === column);
    if (index === -1) {
      throw new ReportFormatError(
        `${this.file}: line ${line}: no "${column}" column, which states the report's merchant account`,
        { file: this.file, line, field: column },
      );
    }
    this.columnIndex = index;
  }

  /** Any record of a records layout, before its type is acted on: the one stating the account is checked. */
  record(cells: string[], line: number): void {
    const { record, position } = this.account;
    if (record === undefined) return;
    if ((cells[this.typeColumn] ?? '').trim() !== record) return;
    this.check(cells[position!] ?? '', line, `${record} position ${position}`);
    this.stated = true;
  }

  /** A data row. */
  row(cells: string[], line: number): void {
    if (this.columnIndex !== undefined) this.check(cells[this.columnIndex] ?? '', line, this.account.column!);
    const { record, position } = this.account;
    if (record !== undefined && !this.stated) {
      throw new ReportFormatError(
        `${this.file}: line ${line}: a row before any ${record} record stating the merchant account (position ${position}): whose report this is cannot be checked, and nothing of it is applied`,
        { file: this.file, line, field: `${record} position ${position}` },
      );
    }
  }

  private check(cell: string, line: number, field: string): void {
    const value = cell.trim();
    if (this.accounts.includes(value)) return;
    throw new ReportFormatError(
      `${this.file}: line ${line}: ${field} is ${JSON.stringify(value.slice(0, 60))}, not the merchant account this reconciler reads (${this.accounts.join(', ')}): the report is another account's, and nothing of it is applied`,
      { file: this.file, line, field },
    );
  }
}
