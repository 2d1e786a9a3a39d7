import type { RowKind } from './rowKind.js';

/**
 * What a partner report says it executed, one record at a time, after parsing and validation.
 * Both report sources (CSV files and partner APIs) produce these; the reconciler stages them in
 * PostgreSQL and matches them against intents there.
 */
export interface PartnerRow {
  /**
   * Where the record starts in its source: the physical line number in a CSV file (1-based, counting
   * the header and skipped lines), or the 1-based position of the record in an API listing.
   */
  line: number;
  /** Our reference as echoed by the partner (order id, "client reference"), if the report has one. */
  reference: string | null;
  /** The partner's own id for the execution (NSU, transaction id), if the report has one. */
  partnerReference: string | null;
  /** Exact decimal string with `.` as separator and no thousands separators, e.g. `"-1234.50"`. */
  amount: string | null;
  /** ISO 4217 code in upper case, e.g. `"BRL"`. */
  currency: string | null;
  /** The instant the partner executed it (report times without an offset are read in the reconciler's time zone). */
  executedAt: Date | null;
  /**
   * What the row says happened (see {@link RowKind}); absent means `execution`. Only executions match,
   * complete and duplicate intents.
   */
  kind?: RowKind;
  /** The report's other amount and currency for the row (see CsvSourceConfig.columns.settlementAmount), evidence only. */
  settlementAmount?: string | null;
  settlementCurrency?: string | null;
  /** The partner's own id of this row (CsvSourceConfig.columns.rowId), part of a non-execution's identity. */
  rowId?: string | null;
}

/** A record the source could not accept. It is reported, never coerced and never silently skipped. */
export interface RejectedRow {
  /** Same meaning as {@link PartnerRow.line}. */
  line: number;
  /** The report's own column or field name that was wrong (or `"*"` when the record as a whole was). */
  field: string;
  /** Why, in words a finance person can act on. */
  reason: string;
  /**
   * The record's identifiers, when they could be read although something else in it was wrong (`null`:
   * the record has none there). A rejected record is still the partner saying it executed something: a
   * run never takes the absence of a row as proof that the intent with one of these identifiers was not
   * executed. Absent when the record could not be read that far (a row of the wrong width, an identifier
   * that is garbled or of the wrong type): such a record may be about any intent, and then the run proves
   * nothing absent at all.
   */
  identifiers?: { reference: string | null; partnerReference: string | null };
  /**
   * The file's last record, without the line break a complete file of this source ends with: it may be cut
   * anywhere, and the rows after it may be missing, so the run proves nothing absent (whatever identifiers
   * it carries, which only keep the intents they name stuck).
   */
  unterminated?: true;
}

/**
 * The period a report says, in its own contents, it is complete for (PayPal's section header, Cielo's file
 * header). Only a reconciler whose `coverage` is `{ fromReport: true }` uses it (docs/DESIGN.md, "Coverage");
 * a reader may emit several (one per section): the run then covers only the period all of them share.
 */
export interface ReportedCoverage {
  /** Where the declaration is in its source (same meaning as {@link PartnerRow.line}). */
  line: number;
  from: Date;
  to: Date;
  /**
   * Why the part of the report this declaration speaks for was not proven whole (a PayPal section with no
   * closing count record: a day split over several files, a file cut in the middle of a section). Such a
   * declaration promises nothing, and the report then proves nothing absent.
   */
  unclosed?: string;
}

/**
 * One item of a parsed report, in source order. A declaration is no row: it is neither read nor rejected,
 * and counts toward nothing.
 */
export type ReportItem = RowItem | { kind: 'declaration'; coverage: ReportedCoverage };

/** A record of the report: a row, or a record the source could not accept. */
export type RowItem = { kind: 'row'; row: PartnerRow } | { kind: 'rejected'; rejected: RejectedRow };

/**
 * A row that says nothing about an intent (a fee, a payout, an inbound message): its identifiers are kept,
 * nothing else in it is read or checked.
 */
export function ignoredRow(line: number, reference: string | null, partnerReference: string | null): RowItem {
  return {
    kind: 'row',
    row: {
      line,
      reference,
      partnerReference,
      amount: null,
      currency: null,
      executedAt: null,
      kind: 'ignored',
    },
  };
}
