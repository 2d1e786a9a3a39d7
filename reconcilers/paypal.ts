import { defineReconciler } from '../src/reconcile/reconcilerConfig.js';
import type { RowKind } from '../src/reports/rowKind.js';

/**
 * paypal: payments received through PayPal, reconciled from the daily Settlement Report (STL, version 9),
 * delivered on PayPal's SFTP server as `STL-yyyymmdd.sequenceNumber.version.CSV` (gzipped or not), as PayPal
 * publishes it: https://developer.paypal.com/docs/reports/sftp-reports/settlement-report/ (record layout and
 * fields), and its transaction event codes: https://developer.paypal.com/docs/transaction-search/transaction-event-codes
 * (and https://developer.paypal.com/reports/reference/t-codes).
 *
 * The file is CSV whose first field is the record type: `RH` report header, `FH` file header, `SH` section
 * header (the period), `CH` the column names, `SB` one row per transaction, `SF` section totals, `SC`
 * section count, `RF` report totals, `RC` report count, `FF` file footer.
 *
 * - Our reference is the `Invoice ID` we sent with the payment; `Transaction ID` is PayPal's. A refund's row
 *   has its own Transaction ID (the payment's is in `PayPal Reference ID`) and the payment's Invoice ID,
 *   which ties it to the execution it reverses.
 * - Amounts are unsigned, with two implied decimals whatever the currency (`10000` is 100.00 USD and 100
 *   JPY: "100,00 yen and $100.00 USD are both represented as 10000"; HUF and TWD alike), with the
 *   direction in `Transaction Debit or Credit` (`CR` money in, `DR` money out): `Gross Transaction Amount` in
 *   `Gross Transaction Currency`. Fees are in their own columns of the same row and are not compared. A row
 *   is dated by its `Transaction Completion Date`.
 * - Row kinds from `Transaction Event Code` and the direction (see {@link paypalRowKind}): a payment
 *   received (T00nn, CR) is an execution; refunds, payment reversals, chargebacks and their reversals are
 *   reversals; fees, currency conversions, bank deposits and withdrawals, holds, authorizations, payments we
 *   sent and corrections are ignored. Any other code is rejected, never guessed.
 * - Coverage from the report itself: the `SH` record's start and end (`2026/11/30 00:00:00 -0800`, with
 *   their offset). The `SC` record's count of the section's `SB` rows and the `FF` record's count of the
 *   file's must agree with what was read, and a file must end with `FF`; otherwise the run fails and
 *   applies nothing (a cut file can never prove a payment absent).
 * - The account: each `SH` record states the account the section is of (position 3, after the period). It
 *   must be `PAYPAL_ACCOUNT_ID` (several: comma-separated); a file of another account fails the run. Without
 *   `PAYPAL_ACCOUNT_ID` the account is not checked and the report proves no payment absent (a warning says so).
 *
 * Verified against PayPal's pages: the record types and their order, CSV with quoted varchar fields, UTF-8,
 * unsigned amounts with two implied decimals in every currency ("100,00 yen and $100.00 USD are both
 * represented as 10000") and a CR/DR column, the CH column names (the same names and order as the
 * STL readers of Magento/OpenMage use, and as a 2024 file shown publicly), SH's start and end in positions 1
 * and 2 with a numeric offset, and the T00nn codes. Not verified (the full field tables were not readable
 * here): the exact fields of SF/RF (totals: ignored here), whether `FF` counts `SB` rows (assumed; a file
 * whose FF counts otherwise fails loudly, never silently), and how a report split over several files
 * (over a million rows) carries `RC` (so `RC` is not checked: it may count the rows of earlier files).
 */
export default defineReconciler({
  partner: 'paypal',
  schedule: '0 13 * * *',
  timezone: 'America/Los_Angeles',
  stuckAfter: '15m',
  // Rows are dated by completion, and an intent started late on a day may complete on the next: the lag is
  // how long a payment of this account can take to complete. An hour holds for instant payments (balance,
  // cards). An account that takes eChecks or has payments held for review, which complete days later, must
  // raise it to that (e.g. '5d'): its daily files then prove nothing absent, and a stuck intent waits for
  // the file that shows it or for a person at the deadline, never for a guess.
  settlementLag: '1h',
  deadline: '4d',
  maxRejectedRatio: 0,
  match: { by: 'reference' },
  coverage: { fromReport: true },
  source: {
    type: 'csv',
    path: 'reports/paypal/STL-*.CSV*',
    dateFormat: 'yyyy/MM/dd HH:mm:ss ZZZ',
    // The account the report is of: the SH record's field after its period (the RH record repeats it).
    // Without PAYPAL_ACCOUNT_ID the account is not checked, and then the report proves nothing absent: a
    // second account's file with one Invoice ID in common would prove every other stuck payment not executed.
    account: { record: 'SH', position: 3, env: 'PAYPAL_ACCOUNT_ID' },
    records: {
      typeColumn: 0,
      header: 'CH',
      data: ['SB'],
      ignore: ['RH', 'FH', 'SF', 'RF', 'RC'],
      coverage: { record: 'SH', from: 1, to: 2 },
      counts: [
        { record: 'SC', position: 1, since: 'SH' },
        { record: 'FF', position: 1 },
      ],
      end: 'FF',
    },
    columns: {
      reference: 'Invoice ID',
      partnerReference: 'Transaction ID',
      amount: 'Gross Transaction Amount',
      currency: 'Gross Transaction Currency',
      // The completion date, not the initiation date: the report lists what settled in its SH period, and a
      // payment initiated just before midnight and completed after it is in the next day's file. Dated by
      // its initiation it would fall outside that file's period and be rejected.
      executedAt: 'Transaction Completion Date',
    },
    amount: {
      // "100,00 yen and $100.00 USD are both represented as 10000": two implied decimals for every
      // currency, yen included, not the currency's ISO 4217 minor unit.
      units: 'minor',
      impliedDecimals: 2,
      sign: { column: 'Transaction Debit or Credit', negative: ['DR'], positive: ['CR'] },
    },
    kind: {
      columns: ['Transaction Event Code', 'Transaction Debit or Credit'],
      classify: (values) =>
        paypalRowKind(values['Transaction Event Code']!, values['Transaction Debit or Credit']!),
    },
  },
});

/** Payments received by the subject: T00nn codes that are a buyer paying a seller. */
const PAYMENTS = new Set([
  'T0000', // general: received payment of a type not in the other T00nn categories
  'T0002', // subscription payment
  'T0003', // pre-approved payment (BillUser API)
  'T0004', // eBay auction payment
  'T0005', // direct payment API
  'T0006', // PayPal Checkout APIs (Express Checkout)
  'T0007', // website payments standard
  'T0009', // gift certificate payment
  'T0010', // third-party auction payment
  'T0011', // mobile payment
  'T0012', // virtual terminal payment
  'T0013', // donation
  'T0018', // PayPal Here payment
]);

/** Money given back for a payment, tied to it: never a second execution. */
const REVERSALS = new Set([
  'T1106', // payment reversal, initiated by PayPal
  'T1107', // payment refund, initiated by the merchant
  'T1201', // chargeback
  'T1202', // chargeback reversal
]);

/**
 * Event groups (the first three characters, as PayPal says the group is enough for reconciliation) whose
 * rows are money movements that are not a payment of ours: fees (T01), currency conversions (T02), bank
 * deposits and withdrawals (T03, T04, T17), holds (T15), authorizations (T13), account corrections (T19).
 */
const IGNORED_GROUPS = new Set(['T01', 'T02', 'T03', 'T04', 'T13', 'T15', 'T17', 'T19']);

/** Codes of the payment and reversal groups that are not a payment of ours nor its reversal. */
const IGNORED = new Set([
  'T0001', // MassPay payment (we paid someone)
  'T0008', // postage payment to a carrier
  'T0014', // rebate payment
  'T0015', // third-party payout
  'T0016', // third-party recoupment
  'T0017', // store-to-store transfer
  'T1105', // reversal of a general account hold
  'T1108', // fee reversal
  'T1110', // hold for dispute investigation
  'T1111', // cancellation of a hold for dispute resolution
]);

/**
 * The kind of one STL row from its T-code and direction: a payment the merchant received (CR) is an
 * execution; the same code as DR is a payment the account sent, which no charge of ours is. Undefined for
 * anything else, which rejects the row.
 */
function paypalRowKind(code: string, direction: string): RowKind | undefined {
  if (direction !== 'CR' && direction !== 'DR') return undefined;
  if (PAYMENTS.has(code)) return direction === 'CR' ? 'execution' : 'ignored';
  if (REVERSALS.has(code)) return 'reversal';
  if (IGNORED.has(code) || IGNORED_GROUPS.has(code.slice(0, 3))) return 'ignored';
  return undefined;
}
