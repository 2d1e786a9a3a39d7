import { writeFileSync } from 'node:fs';
import { DateTime } from 'luxon';
import type { FakeExecution } from '../partnerFake/fakePartnerServer.js';

/**
 * Writes what the acquirer executed as its back office would: the acme-pay dialect (see
 * reconcilers/acme-pay.ts): semicolons, Latin-1, decimal comma with dot thousands, São Paulo local time,
 * and a column we do not map (BANDEIRA) because real files always carry more than we need.
 */
export function writeSettlementFile(path: string, executions: readonly FakeExecution[]): void {
  const lines = ['PEDIDO;NSU;VALOR;MOEDA;DATA;BANDEIRA'];
  for (const execution of executions) {
    const at = DateTime.fromISO(execution.executedAt, { zone: 'America/Sao_Paulo' }).toFormat(
      'dd/MM/yyyy HH:mm:ss',
    );
    lines.push(
      [
        execution.reference,
        execution.id,
        brazilianAmount(execution.amount),
        execution.currency,
        at,
        'VISA',
      ].join(';'),
    );
  }
  writeFileSync(path, Buffer.from(`${lines.join('\r\n')}\r\n`, 'latin1'));
}

/** `1234.5` -> `1.234,5`, on the decimal string itself (no float on the way). */
export function brazilianAmount(amount: string): string {
  const negative = amount.startsWith('-');
  const [integer, fraction] = (negative ? amount.slice(1) : amount).split('.');
  const grouped = integer.replace(/\B(?=(\d{3})+(?!\d))/g, '.');
  return `${negative ? '-' : ''}${grouped}${fraction === undefined ? '' : `,${fraction}`}`;
}
