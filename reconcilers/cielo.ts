import { defineReconciler } from '../src/reconcile/reconcilerConfig.js';
import type { FixedWidthField } from '../src/reports/fixedWidthSourceConfig.js';
import type { KindRejection, RowKind } from '../src/reports/rowKind.js';

/**
 * cielo: card sales acquired by Cielo, reconciled from its Extrato Eletrônico (EDI), the sales file (opção de
 * extrato 03, "Vendas com Plano Parcelado"), as Cielo publishes its layout of 250 positions with record types 0
 * (header), 1 (Resumo de Operações, RO), 2 (Comprovante de Venda, CV) and 9 (trailer), layout version "001":
 * https://github.com/DeveloperCielo/EDI/blob/master/source/extrato-edi.md (the source of
 * https://developercielo.github.io/EDI/extrato-edi, stored at commit 2fbd636d20efe746ad33161fc090e023e05c1d74).
 * Cielo replaced it from 2024 by the v15 layouts (records D, E, 8, ... longer than 250 positions), published
 * only as PDF manuals (https://developercielo.github.io/tutorial/edi-extrato-eletronico) whose positions could
 * not be read here: this file reads the 250-position files, and a v15 file fails on its first record's length.
 *
 * - One line per record, every record 250 characters (Latin-1): any other length, a first record that is not
 *   the header, a header whose Opção de extrato is not 03, a record after the trailer, a file without its
 *   trailer (cut in transit) or a trailer whose Total de registro (2-12: the records between header and
 *   trailer) is not what was read fails the file, and the run applies nothing.
 * - No coverage is declared: the file completes the intents it shows and proves none absent (the run says so
 *   in its warnings); an intent it never shows stays stuck and is raised `unresolved` at the deadline. The
 *   header's Período inicial (20-27) / Período final (28-35) look like a period, but Cielo defines them as
 *   the smallest and largest capture date found in the file's own rows ("menor/maior data de captura
 *   encontrada no movimento"): a period read off the rows promises nothing about the rows that are not there
 *   (a sale presented a day late is in the next file, a late file stretches it back over earlier days), and
 *   Cielo sends one file per chain (Estabelecimento Matriz, 2-11) under the same partner. Where a contract
 *   with Cielo says a file is complete for a day, declare that day (`coverage: { fromFileName }`).
 * - Record 1 (RO) is a batch summary: ignored, but its Tipo de Transação (24-25, Tabela II) and Origem do
 *   ajuste (146-147, Tabela V) say what its CVs are, so each record 2 inherits them from the RO before it,
 *   which must be the RO the CV names (its Número do RO, 12-18, and Estabelecimento Submissor, 2-11): a CV
 *   after another RO (a cancellation's CV placed after a sales RO) is rejected naming Número do RO, never
 *   read with that RO's kind.
 * - Record 2 (CV): our reference is Referência/código do pedido (163-182, what an e-commerce sale sent as the
 *   order code); the partner reference is NSU/DOC (93-98), which Cielo says may repeat (identities also carry
 *   our reference, and `match.partnerReferenceUnique: false` ties a cancellation or chargeback to its sale by
 *   our order code only: one without it is stored untied, with a warning, never tied to another day's sale
 *   that had the same NSU). The TID (73-92) and Número único da transação (189-217) would name the sale, but
 *   the layout text does not say an adjustment CV repeats its sale's, and executions are stored without them. Amount: Valor da compra ou valor da parcela (47-59, 13 digits, two implied decimals) signed
 *   by position 46 (`+` credit, `-` debit), in BRL. Time: Data da venda/ajuste (38-45, `yyyyMMdd`) and Hora
 *   da transação (183-188, `HHmmss`, zeros on records that are not the original sale), in São Paulo time.
 * - Row kinds (see `cvKind`): a CV with a Motivo da rejeição (64-66, Tabela VIII) is a failed try; under a
 *   sale RO (01) it is an execution (installment 02 and later of a plan are the same sale again: ignored);
 *   under an adjustment RO (02 / 03) origins 17 (cancelamento da venda) and 28 (chargeback: contestação do
 *   portador) are reversals, and so are those undoing them (22 and 24: a cancellation returned or refused, 23:
 *   a dispute credited back, 33: estorno de cancelamento), as Adyen's ChargebackReversed is; the other origins
 *   of Tabela V (fees, rent, corrections) are ignored; Plano Cielo (04) and reagendamento (05) are ignored.
 *   The sign (46) must be the kind's: a sale is a credit (`+`), 17 and 28 debits (`-`) under Tipo 03, 22, 23,
 *   24 and 33 credits (`+`) under Tipo 02 (Tabela V does not print a sign: it follows from Tabela II's "a
 *   crédito" / "a débito" and the origins' own wording, "Crédito ..." and "Estorno de cancelamento"); a CV
 *   whose sign contradicts its kind (a `-` CV under a sales RO) is rejected naming the sign. Any other value is
 *   rejected, never guessed. Record types other than 0, 1, 2 and 9 (Cielo suggests skipping them) are
 *   rejected too: they may be sales in a layout this file does not know, and then nothing is proven absent.
 *
 * Verified against the layout text: every position and length above, the record types and tables II, V and
 * VIII. Not verified: that values carry two implied decimals (the layout marks them "(*)" without the note in
 * the stored text; BRL has two decimals), how Origem do ajuste pads its one-digit codes (both `1` and `01` are
 * read as code 1), and what an installment plan's first CV amount is (the installment, so an intent for the
 * whole sale is an amount mismatch a person looks at). The fixture under test/fixtures/partners/cielo/ follows
 * these positions.
 */

/** Tabela VIII, Motivo da rejeição. */
const REJECTION_REASONS = new Set([
  '002',
  '023',
  '031',
  '039',
  '044',
  '045',
  '055',
  '056',
  '057',
  '061',
  '066',
  '067',
  '069',
  '070',
  '071',
  '072',
  '073',
  '074',
  '075',
  '077',
  '078',
  '079',
  '080',
  '081',
  '082',
  '083',
  '084',
  '086',
  '092',
  '093',
  '094',
  '097',
  '099',
  '100',
  '101',
  '102',
  '124',
  '126',
  '128',
  '129',
  '130',
  '133',
  '134',
  '145',
]);

/**
 * Tabela V, Origem do ajuste: the codes that reverse a sale (cancellation 17, chargeback 28: debits, `-`) or
 * undo such a reversal (22 and 23 are "Crédito ...", 24 "Crédito por cancelamento rejeitado", 33 "Estorno
 * de cancelamento de venda": credits, `+`), with the sign their CV must carry; the table's others (1 to 38)
 * are fees, rent and corrections.
 */
const REVERSING_ADJUSTMENTS = new Map<number, '+' | '-'>([
  [17, '-'],
  [28, '-'],
  [22, '+'],
  [23, '+'],
  [24, '+'],
  [33, '+'],
]);

const SIGN = 'Sinal do valor da compra ou valor da parcela';

/** Tabela II: the sign an adjustment RO's type says its CVs carry (02 a crédito, 03 a débito). */
const ADJUSTMENT_SIGN: Readonly<Record<string, '+' | '-'>> = { '02': '+', '03': '-' };

/**
 * What a CV says happened, from its RO's Tipo de Transação and Origem do ajuste and its own rejection,
 * installment and sign. The sign must be what the kind is: a sale is a credit (`+`), a cancellation or
 * chargeback a debit (`-`), their undoing a credit, under an RO of that direction; a `-` CV under a sales
 * RO is not a sale Cielo executed for us, whatever else it is, so it is rejected naming the sign.
 */
function cvKind(values: Readonly<Record<string, string>>): RowKind | KindRejection | undefined {
  // A sign that is neither `+` nor `-` is rejected by amount.sign, in its own words: only a sign that
  // contradicts the kind is this function's to reject.
  const sign = values[SIGN]!;
  const contradicts = (expected: '+' | '-') => (sign === '+' || sign === '-') && sign !== expected;
  const rejection = values['Motivo da rejeição']!;
  if (rejection !== '') return REJECTION_REASONS.has(rejection) ? 'failed' : undefined;
  const installment = values.Parcela!;
  const type = values['Tipo de Transação']!;
  switch (type) {
    case '01': // Venda
      if (contradicts('+')) {
        return {
          reject: SIGN,
          reason: 'a sale (Tipo de Transação 01) is a credit ("+"): a debit is not a sale',
        };
      }
      if (installment === '00' || installment === '01') return 'execution';
      return /^\d\d$/.test(installment) ? 'ignored' : undefined;
    case '02': // Ajuste a crédito
    case '03': {
      // Ajuste a débito
      const origin = values['Origem do ajuste']!;
      const code = /^\d{1,2}$/.test(origin) ? Number(origin) : 0;
      if (code < 1 || code > 38) return undefined;
      const expected = REVERSING_ADJUSTMENTS.get(code);
      if (expected === undefined) return 'ignored';
      if (contradicts(expected) || ADJUSTMENT_SIGN[type] !== expected) {
        return {
          reject: SIGN,
          reason: `Origem do ajuste ${code} is a ${expected === '+' ? 'credit ("+") under Tipo de Transação 02' : 'debit ("-") under Tipo de Transação 03'}: which reversal this is, is not guessed`,
        };
      }
      return 'reversal';
    }
    case '04': // Plano Cielo
    case '05': // Reagendamento
      return 'ignored';
    default:
      return undefined;
  }
}

const field = (name: string, start: number, length: number, impliedDecimals?: number): FixedWidthField =>
  impliedDecimals === undefined ? { name, start, length } : { name, start, length, impliedDecimals };

export default defineReconciler({
  partner: 'cielo',
  schedule: '30 7 * * *',
  timezone: 'America/Sao_Paulo',
  stuckAfter: '15m',
  settlementLag: '2h',
  deadline: '5d',
  // NSU/DOC numbers a sale within its day and repeats: a reversal is tied to its sale by our order code only.
  match: { by: 'reference', partnerReferenceUnique: false },
  source: {
    type: 'fixedWidth',
    path: 'reports/cielo/*.txt',
    encoding: 'latin1',
    recordLength: 250,
    recordType: { name: 'Tipo de registro', start: 1, length: 1 },
    header: {
      type: '0',
      fields: [
        field('Estabelecimento Matriz', 2, 10),
        field('Data de processamento', 12, 8),
        field('Período inicial', 20, 8),
        field('Período final', 28, 8),
        field('Sequência', 36, 7),
        field('Empresa adquirente', 43, 5),
        field('Opção de extrato', 48, 2),
        field('Versão Layout', 71, 3),
      ],
      expect: { 'Opção de extrato': ['03'], 'Empresa adquirente': ['CIELO', 'Cielo'] },
    },
    trailer: { type: '9', count: field('Total de registro', 2, 11) },
    records: {
      '1': {
        ignored: true,
        fields: [
          field('Estabelecimento Submissor', 2, 10),
          field('Número do RO', 12, 7),
          field('Tipo de Transação', 24, 2),
          field('Origem do ajuste', 146, 2),
        ],
      },
      '2': {
        fields: [
          field('Estabelecimento Submissor', 2, 10),
          field('Número do RO', 12, 7),
          field('Data da venda/ajuste', 38, 8),
          field('Sinal do valor da compra ou valor da parcela', 46, 1),
          field('Valor da compra ou valor da parcela', 47, 13, 2),
          field('Parcela', 60, 2),
          field('Total de parcelas', 62, 2),
          field('Motivo da rejeição', 64, 3),
          field('Código de autorização', 67, 6),
          field('TID', 73, 20),
          field('NSU/DOC', 93, 6),
          field('Referência/código do pedido', 163, 20),
          field('Hora da transação', 183, 6),
          field('Número único da transação', 189, 29),
        ],
        // A CV's RO is the one it names (and of its own establishment), not merely the latest one read.
        inherit: {
          from: '1',
          fields: ['Tipo de Transação', 'Origem do ajuste'],
          key: { 'Número do RO': 'Número do RO', 'Estabelecimento Submissor': 'Estabelecimento Submissor' },
        },
        columns: {
          reference: 'Referência/código do pedido',
          partnerReference: 'NSU/DOC',
          amount: 'Valor da compra ou valor da parcela',
          currency: { value: 'BRL' },
        },
        executedAt: {
          date: 'Data da venda/ajuste',
          dateFormat: 'yyyyMMdd',
          time: 'Hora da transação',
          timeFormat: 'HHmmss',
        },
        amount: {
          sign: { column: 'Sinal do valor da compra ou valor da parcela', negative: ['-'], positive: ['+'] },
        },
        kind: {
          columns: ['Motivo da rejeição', 'Tipo de Transação', 'Origem do ajuste', 'Parcela', SIGN],
          classify: cvKind,
        },
      },
    },
  },
});
