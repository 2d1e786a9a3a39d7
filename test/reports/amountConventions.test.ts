import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { applyAmountConvention, minorUnitDigits } from '../../src/reports/amountConvention.js';
import type { CsvSourceConfig } from '../../src/reports/csvSourceConfig.js';
import type { ReportItem } from '../../src/reports/partnerRow.js';
import { readCsvReport } from '../../src/reports/readCsvReport.js';

/**
 * Amount conventions: the same execution written as partners write it (minor units, a CR/DR column, a
 * debit and a credit column, a negative price) reads as the same exact amount, and every doubtful value
 * is a rejected row naming its column, never a guess.
 */
describe('reports: amount conventions', () => {
  let dir: string;
  let count = 0;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'amounts-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function read(lines: string[], source: Partial<CsvSourceConfig>): Promise<ReportItem[]> {
    count += 1;
    const file = path.join(dir, `r${count}.csv`);
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    const items: ReportItem[] = [];
    const config: CsvSourceConfig = {
      type: 'csv',
      path: file,
      columns: { reference: 'ref', amount: 'amount', currency: 'cur' },
      ...source,
    };
    for await (const item of readCsvReport(file, config, { timezone: 'UTC' })) items.push(item);
    return items;
  }

  const amounts = (items: ReportItem[]) =>
    items.map((item) =>
      item.kind === 'row' ? item.row.amount : { rejected: 'rejected' in item ? item.rejected : item },
    );

  it('minor units follow each currency`s ISO 4217 minor unit, in any case of its code', async () => {
    const items = await read(
      [
        'ref,amount,cur',
        'a,1050,BRL',
        'b,1050,jpy',
        'c,1050,KWD',
        'd,-7,usd',
        'e,0,EUR',
        'f,10.5,BRL',
        'g,5,XYZ',
      ],
      { amount: { units: 'minor' } },
    );
    expect(amounts(items)).to.deep.equal([
      '10.50',
      '1050',
      '1.050',
      '-0.07',
      '0.00',
      {
        rejected: {
          line: 7,
          field: 'amount',
          reason: '"10.5" is not a whole number of minor units',
          identifiers: { reference: 'f', partnerReference: null },
        },
      },
      {
        rejected: {
          line: 8,
          field: 'amount',
          reason: 'the minor unit of "XYZ" is not known, so "5" cannot be read in minor units',
          identifiers: { reference: 'g', partnerReference: null },
        },
      },
    ]);
    expect(
      items.filter((i) => i.kind === 'row').map((i) => i.kind === 'row' && i.row.currency),
    ).to.deep.equal(['BRL', 'JPY', 'KWD', 'USD', 'EUR']);
  });

  it('a debit/credit indicator gives the sign of an unsigned amount; an unknown indicator or a signed amount is rejected', async () => {
    const items = await read(
      ['ref,amount,cur,dc', 'a,1050,USD,CR', 'b,1050,USD,DR', 'c,1050,USD,XX', 'd,-1050,USD,DR'],
      {
        amount: { units: 'minor', sign: { column: 'dc', negative: ['DR'], positive: ['CR'] } },
      },
    );
    expect(amounts(items)).to.deep.equal([
      '10.50',
      '-10.50',
      {
        rejected: {
          line: 4,
          field: 'dc',
          reason: '"XX" is not a known debit/credit indicator (known: DR, CR)',
          identifiers: { reference: 'c', partnerReference: null },
        },
      },
      {
        rejected: {
          line: 5,
          field: 'amount',
          reason: '"-1050" has a sign, but the report gives the sign elsewhere',
          identifiers: { reference: 'd', partnerReference: null },
        },
      },
    ]);
  });

  it('an amount in one of two columns (Adyen`s Gross Debit / Gross Credit): the column gives the sign; both or neither is rejected', async () => {
    const items = await read(
      [
        'ref,Gross Debit (GC),Gross Credit (GC),cur',
        'a,,10.50,EUR',
        'b,3.20,,EUR',
        'c,,,EUR',
        'd,1.00,1.00,EUR',
      ],
      {
        columns: { reference: 'ref', currency: 'cur' },
        amount: { debitCredit: { debit: 'Gross Debit (GC)', credit: 'Gross Credit (GC)' } },
      },
    );
    expect(amounts(items)).to.deep.equal([
      '10.50',
      '-3.20',
      {
        rejected: {
          line: 4,
          field: 'Gross Debit (GC)',
          reason: 'neither Gross Debit (GC) and Gross Credit (GC) hold an amount',
          identifiers: { reference: 'c', partnerReference: null },
        },
      },
      {
        rejected: {
          line: 5,
          field: 'Gross Debit (GC)',
          reason: 'both Gross Debit (GC) and Gross Credit (GC) hold an amount',
          identifiers: { reference: 'd', partnerReference: null },
        },
      },
    ]);
  });

  it('absolute values: a price written negative is the amount paid', async () => {
    const items = await read(['ref,amount,cur', 'a,-0.0075,USD', 'b,0.0075,USD', 'c,-0,USD'], {
      amount: { absolute: true },
    });
    expect(amounts(items)).to.deep.equal(['0.0075', '0.0075', '0']);
  });

  it('a convention with a missing column or a contradiction is refused before reading', async () => {
    let error: unknown;
    try {
      await read(['ref,amount,cur', 'a,1,USD'], {
        amount: { sign: { column: 'dc', negative: ['DR'], positive: ['CR'] } },
      });
    } catch (caught) {
      error = caught;
    }
    expect(String(error)).to.contain('"dc" (amount)');
    error = undefined;
    try {
      await read(['ref,amount,cur', 'a,1,USD'], {
        amount: { units: 'cents' as never, sign: { column: 'dc', negative: ['X'], positive: ['X'] } },
      });
    } catch (caught) {
      error = caught;
    }
    expect(String(error)).to.contain('amount.units must be "major" or "minor", got "cents"');
    expect(String(error)).to.contain('amount.sign: an indicator cannot be both negative and positive');
  });

  it('implied decimals fixed for every currency (PayPal): 10000 is 100.00 in USD and in JPY; refused without minor units or out of range', async () => {
    const fixed = { units: 'minor', impliedDecimals: 2 } as const;
    for (const currency of ['USD', 'JPY', 'KWD']) {
      expect(applyAmountConvention('10000', { currency, convention: fixed })).to.deep.equal({
        ok: true,
        value: '100.00',
      });
    }
    for (const [amount, message] of [
      [{ impliedDecimals: 2 }, 'amount.impliedDecimals needs units: "minor"'],
      [{ units: 'minor', impliedDecimals: -1 }, 'amount.impliedDecimals must be a whole number from 0 to 10'],
      [
        { units: 'minor', impliedDecimals: 1.5 },
        'amount.impliedDecimals must be a whole number from 0 to 10',
      ],
    ] as const) {
      let error: unknown;
      try {
        await read(['ref,amount,cur', 'a,1,USD'], { amount: amount as never });
      } catch (caught) {
        error = caught;
      }
      expect(String(error), JSON.stringify(amount)).to.contain(message);
    }
  });

  it('the other amount/currency pair (settlement beside presentment) is kept as evidence, read in any case', async () => {
    const items = await read(
      ['ref,amount,cur,gross,settled_in', 'a,25.00,usd,23.10,eur', 'b,25.00,usd,,', 'c,1.00,usd,0.92,euro'],
      {
        columns: {
          reference: 'ref',
          amount: 'amount',
          currency: 'cur',
          settlementAmount: 'gross',
          settlementCurrency: 'settled_in',
        },
      },
    );
    expect(
      items
        .slice(0, 2)
        .map(
          (i) =>
            i.kind === 'row' && [
              i.row.amount,
              i.row.currency,
              i.row.settlementAmount,
              i.row.settlementCurrency,
            ],
        ),
    ).to.deep.equal([
      ['25.00', 'USD', '23.10', 'EUR'],
      ['25.00', 'USD', undefined, undefined],
    ]);
    expect(items[2]).to.deep.equal({
      kind: 'rejected',
      rejected: {
        line: 4,
        field: 'settled_in',
        reason: '"euro" is not a 3-letter ISO 4217 currency code',
        identifiers: { reference: 'c', partnerReference: null },
      },
    });
  });

  it('minor units, exactly: n minor units of a currency with d digits is n / 10^d, digit for digit', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }),
        fc.constantFrom('JPY', 'BRL', 'KWD', 'BHD'),
        (n, currency) => {
          const digits = minorUnitDigits(currency)!;
          const result = applyAmountConvention(n.toString(), { currency, convention: { units: 'minor' } });
          expect(result.ok).to.equal(true);
          const value = (result as { value: string }).value;
          const scaled = BigInt(value.replace('.', ''));
          expect(scaled).to.equal(n);
          expect(value.includes('.') ? value.split('.')[1]!.length : 0).to.equal(digits);
        },
      ),
    );
  });
});
