import { defineReconciler } from 'intent-ledger';

/**
 * acme-pay: a Brazilian card acquirer. Its back office drops one settlement file per day, exported the way
 * such systems do: semicolons, Latin-1, decimal comma with dot thousands, local São Paulo times.
 *
 *   PEDIDO;NSU;VALOR;MOEDA;DATA;BANDEIRA
 *   order-1001;000123456;1.234,56;BRL;28/11/2026 14:03:11;VISA
 */
export default defineReconciler({
  partner: 'acme-pay',
  schedule: '*/15 * * * *',
  timezone: 'America/Sao_Paulo',
  stuckAfter: '15m',
  settlementLag: '2h',
  deadline: '3d',
  maxRejectedRatio: 0.01,
  match: { by: 'reference' },
  // One file per day, named for it (reports/acme-pay/2026-11-28.csv): complete for that São Paulo day.
  coverage: { fromFileName: { pattern: '(\\d{4}-\\d{2}-\\d{2})\\.csv$' } },
  source: {
    type: 'csv',
    path: 'reports/acme-pay/*.csv',
    delimiter: ';',
    quote: '"',
    encoding: 'latin1',
    skipLines: 0,
    decimalSeparator: ',',
    thousandsSeparator: '.',
    dateFormat: 'dd/MM/yyyy HH:mm:ss',
    columns: {
      reference: 'PEDIDO',
      partnerReference: 'NSU',
      amount: 'VALOR',
      currency: 'MOEDA',
      executedAt: 'DATA',
    },
  },
});
