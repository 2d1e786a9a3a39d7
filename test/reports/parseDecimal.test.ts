import { expect } from 'chai';
import fc from 'fast-check';
import { checkedDecimal, type DecimalFormat, parseDecimal } from '../../src/reports/parseDecimal.js';

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

describe('parseDecimal fast path', () => {
  // parseDecimal answers plain amounts in one pass and sends anything else through the checks; both must
  // agree on every input, including the ones the fast path turns away.
  const formats: DecimalFormat[] = [
    BRAZIL,
    US,
    {},
    { decimalSeparator: ',' },
    { decimalSeparator: ',', thousandsSeparator: ' ' },
    { decimalSeparator: '.', thousandsSeparator: "'" },
    { decimalSeparator: ',', thousandsSeparator: '\u00a0' },
  ];
  const characters = [
    '0',
    '0',
    '1',
    '2',
    '5',
    '9',
    '9',
    '.',
    ',',
    '-',
    '+',
    ' ',
    "'",
    '\u00a0',
    'e',
    'E',
    'x',
  ];

  it('gives the checked result for random text in every format', () => {
    const text = fc.array(fc.constantFrom(...characters), { maxLength: 30 }).map((chars) => chars.join(''));
    fc.assert(
      fc.property(text, fc.constantFrom(...formats), (input, format) => {
        const decimal = format.decimalSeparator ?? '.';
        const thousands = format.thousandsSeparator || undefined;
        expect(parseDecimal(input, format)).to.deep.equal(checkedDecimal(input, decimal, thousands));
      }),
      { numRuns: 20_000 },
    );
  });

  it('gives the checked result for well-formed amounts near the limits', () => {
    const amount = fc.record({
      sign: fc.constantFrom('', '-', '+'),
      integer: fc.stringMatching(/^[0-9]{1,24}$/),
      fraction: fc.option(fc.stringMatching(/^[0-9]{0,12}$/), { nil: undefined }),
      group: fc.boolean(),
    });
    fc.assert(
      fc.property(amount, fc.constantFrom(...formats), ({ sign, integer, fraction, group }, format) => {
        const decimal = format.decimalSeparator ?? '.';
        const thousands = format.thousandsSeparator || undefined;
        const grouped =
          group && thousands !== undefined ? integer.replace(/\B(?=(\d{3})+(?!\d))/g, thousands) : integer;
        const input = `${sign}${grouped}${fraction === undefined ? '' : `${decimal}${fraction}`}`;
        expect(parseDecimal(input, format)).to.deep.equal(checkedDecimal(input, decimal, thousands));
      }),
      { numRuns: 5_000 },
    );
  });

  it('refuses letters as separators on the fast path (with "e" as separator, 1e5 stays exponent notation)', () => {
    expect(parseDecimal('1e5', { decimalSeparator: 'e' })).to.deep.equal({
      ok: false,
      reason: 'exponent notation (like 1e5) is not accepted',
    });
  });
});
