import { defineReconciler } from '../src/reconcile/reconcilerConfig.js';

/**
 * stripe: card payments through Stripe, reconciled from the Itemized payout reconciliation report
 * (`payout_reconciliation.itemized.5`, CSV from the Dashboard or the Reporting API), as Stripe publishes it:
 * https://docs.stripe.com/reports/payout-reconciliation (columns: https://docs.stripe.com/reports/report-types/payout-reconciliation)
 * and its reporting categories: https://docs.stripe.com/reports/reporting-categories
 *
 * Columns read (found by name, so an export with more columns reads the same): `balance_transaction_id`,
 * `created_utc`, `currency`, `gross`, `reporting_category`, `charge_id`, `customer_facing_amount`, `customer_facing_currency`,
 * and `payment_metadata[order_id]`, the metadata key our charges carry (add it to the report's columns).
 *
 * - Our reference is `payment_metadata[order_id]`; the partner reference is `charge_id` (`ch_...`), which a
 *   refund's or a dispute's row carries too: it ties them to the charge they reverse. The row's own
 *   `balance_transaction_id` is part of a refund's or dispute's identity (`columns.rowId`): two refunds of
 *   one charge in two payouts are two records.
 * - Compared with the intent: the presentment amount, `customer_facing_amount` in `customer_facing_currency`
 *   (what the customer was charged, in major units; Stripe writes currency codes in lower case). `gross` /
 *   `currency`, in the settlement currency after conversion, are kept beside each row as evidence, never
 *   compared.
 * - Row kinds from `reporting_category`: `charge` is an execution; `refund`, `refund_failure`, `dispute`,
 *   `dispute_reversal`, `partial_capture_reversal` and `charge_failure` are reversals; fees, payouts,
 *   transfers, tax, adjustments and the other balance movements are ignored. Any other category is rejected.
 * - A payout's report lists what that payout settled, not a period: no coverage is declared, so a report
 *   completes the intents it shows and proves none absent.
 */
export default defineReconciler({
  partner: 'stripe',
  schedule: '30 * * * *',
  timezone: 'UTC',
  stuckAfter: '15m',
  settlementLag: '7d',
  deadline: '14d',
  maxRejectedRatio: 0,
  match: { by: 'reference' },
  source: {
    type: 'csv',
    path: 'reports/stripe/*.csv',
    dateFormat: 'yyyy-MM-dd HH:mm:ss',
    columns: {
      reference: 'payment_metadata[order_id]',
      partnerReference: 'charge_id',
      amount: 'customer_facing_amount',
      currency: 'customer_facing_currency',
      executedAt: 'created_utc',
      settlementAmount: 'gross',
      settlementCurrency: 'currency',
      // The row's own id: balance_transaction_id, the balance transaction the row is (one per charge, refund
      // or dispute movement, in the report's column list above). A refund's or dispute's row carries its
      // charge's charge_id, so without it two partial refunds of one charge in two payouts would look like one
      // row read twice.
      rowId: 'balance_transaction_id',
    },
    kind: {
      column: 'reporting_category',
      values: {
        charge: 'execution',
        refund: 'reversal',
        refund_failure: 'reversal',
        dispute: 'reversal',
        dispute_reversal: 'reversal',
        partial_capture_reversal: 'reversal',
        charge_failure: 'reversal',
        fee: 'ignored',
        payout: 'ignored',
        payout_reversal: 'ignored',
        transfer: 'ignored',
        transfer_reversal: 'ignored',
        tax: 'ignored',
        other_adjustment: 'ignored',
        network_cost: 'ignored',
        platform_earning: 'ignored',
        platform_earning_refund: 'ignored',
        topup: 'ignored',
        topup_reversal: 'ignored',
        risk_reserved_funds: 'ignored',
        connect_reserved_funds: 'ignored',
        connect_collection_transfer: 'ignored',
        unreconciled_customer_funds: 'ignored',
      },
    },
  },
});
