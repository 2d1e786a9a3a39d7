import { expect } from 'chai';
import fc from 'fast-check';
import { type DecimalFormat, parseDecimal } from '../../src/reports/parseDecimal.js';

const BRAZIL: DecimalFormat = { decimalSeparator: ',', thousandsSeparator: '.' };
const US: DecimalFormat = { decimalSeparator: '.', thousandsSeparator: ',' };

describe('parseDecimal', () => {
  describe('accepts and normalises', () => {
    const cases: Array<[string, DecimalFormat, string]> = [
      ['1.234,50', BRAZIL, '1234.50'],
      ['-0,5', BRAZIL, '-0.5'],
      ['12.345.678,9', BRAZIL, '12345678.9'],
      ['1234,5', BRAZIL, '1234.5'],
      ['1,234,567.89', US, '1234567.89'],
      ['1234.5', {}, '1234.5'],
      ['+12', {}, '12'],
      ['007', {}, '7'],
      ['00.50', {}, '0.50'],
      ['0', {}, '0'],
      ['0.10', {}, '0.10'],
      ['-0,00', BRAZIL, '0.00'],
      ['-000', {}, '0'],
      [',5', BRAZIL, '0.5'],
      ['-,5', BRAZIL, '-0.5'],
      ['0.1', {}, '0.1'],
      ['1 234,5', { decimalSeparator: ',', thousandsSeparator: ' ' }, '1234.5'],
      ['1\u00a0234\u00a0567,01', { decimalSeparator: ',', thousandsSeparator: '\u00a0' }, '1234567.01'],
      ["1'234.5", { decimalSeparator: '.', thousandsSeparator: "'" }, '1234.5'],
      // 20 + 10 digits: beyond what a JS number holds exactly, so this proves no float is involved.
      ['99999999999999999999.9999999999', {}, '99999999999999999999.9999999999'],
      ['-12345678901234567890.0000000001', {}, '-12345678901234567890.0000000001'],
      ['0000000000000000000000001', {}, '1'],
    ];
    for (const [text, format, expected] of cases) {
      it(`${JSON.stringify(text)} with ${JSON.stringify(format)} -> ${expected}`, () => {
        expect(parseDecimal(text, format)).to.deep.equal({ ok: true, value: expected });
      });
    }
  });

  describe('rejects with a reason', () => {
    const cases: Array<[string, DecimalFormat, string]> = [
      ['', {}, 'empty'],
      ['1.2.3', {}, 'more than one decimal separator'],
      ['1.2.3', BRAZIL, 'misplaced thousands separator (digits must be grouped by three)'],
      ['1,2,3', BRAZIL, 'more than one decimal separator'],
      ['--5', {}, 'more than one sign'],
      ['+-5', {}, 'more than one sign'],
      ['-', {}, 'a sign without digits'],
      ['5-', {}, 'a sign is only allowed before the first digit'],
      ['1e5', {}, 'exponent notation (like 1e5) is not accepted'],
      ['1.5E-3', {}, 'exponent notation (like 1e5) is not accepted'],
      ['2,5e3', BRAZIL, 'exponent notation (like 1e5) is not accepted'],
      ['NaN', {}, 'NaN is not a number'],
      ['Infinity', {}, 'Infinity is not a number'],
      ['-Infinity', {}, 'Infinity is not a number'],
      ['inf', {}, 'inf is not a number'],
      ['abc', {}, 'unexpected character "a"'],
      ['12x', {}, 'unexpected character "x"'],
      ['12.5x', {}, 'unexpected character "x"'],
      ['R$ 12', {}, 'unexpected character "R"'],
      [' 12', {}, 'unexpected character " "'],
      ['\u0663', {}, 'unexpected character "\u0663"'],
      ['1,234.50', {}, 'unexpected character ","'],
      ['1.234,50', { decimalSeparator: ',' }, 'unexpected character "."'],
      ['12,34.5', US, 'misplaced thousands separator (digits must be grouped by three)'],
      ['1234,567.5', US, 'misplaced thousands separator (digits must be grouped by three)'],
      [',123.5', US, 'misplaced thousands separator (digits must be grouped by three)'],
      ['1,23,456', US, 'misplaced thousands separator (digits must be grouped by three)'],
      ['1,234,', US, 'misplaced thousands separator (digits must be grouped by three)'],
      ['1.234,5.6', BRAZIL, 'thousands separator after the decimal separator'],
      ['5.', {}, 'no digits after the decimal separator'],
      ['.', {}, 'no digits after the decimal separator'],
      ['123456789012345678901', {}, 'too many digits: 21 before the decimal separator (at most 20)'],
      [
        '123.456.789.012.345.678.901,5',
        BRAZIL,
        'too many digits: 21 before the decimal separator (at most 20)',
      ],
      ['1.12345678901', {}, 'too many digits: 11 after the decimal separator (at most 10)'],
      ['0.00000000000', {}, 'too many digits: 11 after the decimal separator (at most 10)'],
    ];
    for (const [text, format, reason] of cases) {
      it(`${JSON.stringify(text)} with ${JSON.stringify(format)}: ${reason}`, () => {
        expect(parseDecimal(text, format)).to.deep.equal({ ok: false, reason });
      });
    }
  });

  it('refuses a format whose separators are the same, as a programming error', () => {
    expect(() => parseDecimal('1', { decimalSeparator: ',', thousandsSeparator: ',' })).to.throw(
      RangeError,
      'invalid decimal format',
    );
  });

  it('reads back any amount written with Brazilian grouping, exactly', () => {
    const amount = fc.record({
      negative: fc.boolean(),
      integer: fc.stringMatching(/^(0|[1-9][0-9]{0,19})$/),
      fraction: fc.option(fc.stringMatching(/^[0-9]{1,10}$/), { nil: undefined }),
    });
    fc.assert(
      fc.property(amount, ({ negative, integer, fraction }) => {
        const grouped = integer.replace(/\B(?=(\d{3})+(?!\d))/g, '.');
        const text = `${negative ? '-' : ''}${grouped}${fraction === undefined ? '' : `,${fraction}`}`;
        const canonical = `${integer}${fraction === undefined ? '' : `.${fraction}`}`;
        const isZero = /^[0.]+$/.test(canonical);
        expect(parseDecimal(text, BRAZIL)).to.deep.equal({
          ok: true,
          value: negative && !isZero ? `-${canonical}` : canonical,
        });
      }),
      { numRuns: 500 },
    );
  });
});
