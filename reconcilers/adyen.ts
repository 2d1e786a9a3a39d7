import { defineReconciler } from '../src/reconcile/reconcilerConfig.js';

/**
 * adyen: card payments through Adyen, reconciled from the Settlement details report (CSV, one file per payout
 * batch), as Adyen publishes it: https://docs.adyen.com/reporting/settlement-reconciliation/transaction-level/settlement-details-report
 *
 * Standard columns, in order: Company Account, Merchant Account, Psp Reference, Merchant Reference, Payment
 * Method, Creation Date, TimeZone, Type, Modification Reference, Gross Currency, Gross Debit (GC), Gross Credit
 * (GC), Exchange Rate, Net Currency, Net Debit (NC), Net Credit (NC), Commission (NC), Markup (NC), Scheme Fees
 * (NC), Interchange (NC), Payment Method Variant, Modification Merchant Reference, Batch Number, Reserved4 to
 * Reserved10. Columns are found by name, so an account with more or reordered columns reads the same.
 *
 * - Our reference is the `Merchant Reference` we sent with the payment; `Psp Reference` is Adyen's, and a
 *   refund's or chargeback's row carries the payment's own Psp Reference (its own is `Modification
 *   Reference`), which ties it to the execution it reverses. That own `Modification Reference` is part of the
 *   identity of refund and chargeback rows (`columns.rowId`): two modifications of one payment in two batches
 *   are two records, not one read twice.
 * - The amount is in `Gross Debit (GC)` or `Gross Credit (GC)`, in `Gross Currency` (what the shopper was
 *   charged); a payment is a credit. Net amounts (after Adyen's fees, in the payout currency) are not compared.
 * - Row kinds from `Type`: `Settled` / `SettledBulk` are executions; refunds, chargebacks and their reversals
 *   are reversals; fees, costs, payouts and corrections are ignored. Any other type is rejected, never guessed.
 * - `Creation Date` is `yyyy-MM-dd HH:mm:ss` in the account's time zone setting, named per row in `TimeZone`
 *   (CET / CEST for an account on Amsterdam time), which is read as its fixed offset (`columns.timeZone`): the
 *   hour repeated when summer time ends is told apart (2026-10-25 02:30:00 CEST is 00:30Z, the same wall clock
 *   in CET 01:30Z). A row whose TimeZone is empty, unknown or an abbreviation of several meanings (`IST`, and
 *   `PST` / `EST` / `MST`, which are also Asian and Australian zones) is rejected. An account on US time says
 *   what its abbreviations mean: `source.timeZoneAbbreviations: { PST: 'UTC-8', PDT: 'UTC-7' }`.
 *   `timezone` (the account's setting) is for the schedule.
 * - Every row's `Merchant Account` must be `ADYEN_MERCHANT_ACCOUNT` (several: comma-separated); a file of another
 *   account fails the run. Without it the account is not checked, and the run's warnings say so.
 * - Files are named by batch (`settlement_detail_report_batch_4.csv`) and carry no period: no coverage is
 *   declared, so a report completes the intents it shows and proves none absent.
 */
export default defineReconciler({
  partner: 'adyen',
  schedule: '0 * * * *',
  timezone: 'Europe/Amsterdam',
  stuckAfter: '15m',
  settlementLag: '3d',
  deadline: '10d',
  maxRejectedRatio: 0,
  match: { by: 'reference' },
  source: {
    type: 'csv',
    path: 'reports/adyen/settlement_detail_report_batch_*.csv',
    dateFormat: 'yyyy-MM-dd HH:mm:ss',
    // Every row states its merchant account; a batch of another account (one Merchant Reference in common
    // would complete our intent from its payment) fails the run. Unset: not checked, and a warning says so.
    account: { column: 'Merchant Account', env: 'ADYEN_MERCHANT_ACCOUNT' },
    columns: {
      reference: 'Merchant Reference',
      partnerReference: 'Psp Reference',
      currency: 'Gross Currency',
      executedAt: 'Creation Date',
      timeZone: 'TimeZone',
      // The row's own id (the Settlement details report's Modification Reference column, in the spec above:
      // the modification's own PSP reference): a refund or chargeback carries the payment's Psp Reference, so a
      // later batch's ChargebackReversed or second partial refund would otherwise look like a re-read of the first.
      rowId: 'Modification Reference',
    },
    amount: { debitCredit: { debit: 'Gross Debit (GC)', credit: 'Gross Credit (GC)' } },
    kind: {
      column: 'Type',
      values: {
        Settled: 'execution',
        SettledBulk: 'execution',
        Refunded: 'reversal',
        RefundedBulk: 'reversal',
        RefundedReversed: 'reversal',
        Chargeback: 'reversal',
        SecondChargeback: 'reversal',
        ChargebackReversed: 'reversal',
        Fee: 'ignored',
        MiscCosts: 'ignored',
        PaymentCost: 'ignored',
        MerchantPayout: 'ignored',
        DepositCorrection: 'ignored',
        InvoiceDeduction: 'ignored',
        Balancetransfer: 'ignored',
        ReserveAdjustment: 'ignored',
        ManualCorrected: 'ignored',
      },
    },
  },
});
