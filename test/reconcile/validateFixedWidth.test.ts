import { expect } from 'chai';
import cielo from '../../reconcilers/cielo.js';
import { ReconcilerConfigError } from '../../src/reconcile/errors/ReconcilerConfigError.js';
import { validateReconciler } from '../../src/reconcile/validateReconciler.js';
import type { FixedWidthSourceConfig } from '../../src/reports/fixedWidthSourceConfig.js';

/** validateReconciler knows the settings of a fixed-width source: a typo anywhere in it fails at load. */
describe('validateReconciler: fixed-width sources', () => {
  const source = cielo.source as FixedWidthSourceConfig;

  function problemsOf(value: unknown): string[] {
    try {
      validateReconciler(value, 'reconcilers/cielo.ts');
    } catch (error) {
      expect(error).to.be.instanceOf(ReconcilerConfigError);
      return [...(error as ReconcilerConfigError).problems];
    }
    return [];
  }

  it('accepts the shipped Cielo reconciler', () => {
    expect(problemsOf(cielo)).to.deep.equal([]);
  });

  it('names typos at every level, fields past the record, and a coverage the source cannot declare', () => {
    const sale = source.records['2']!;
    const problems = problemsOf({
      ...cielo,
      coverage: { fromReport: true },
      source: {
        ...source,
        recordLenght: 250,
        header: { type: '0', fields: source.header!.fields },
        records: {
          ...source.records,
          '2': {
            ...sale,
            colums: sale.columns,
            fields: [...sale.fields, { name: 'Extra', start: 240, lenght: 20 }],
          },
        },
      },
    });
    expect(problems).to.include(
      'source.recordLenght is not a known setting (did you mean source.recordLength?); known: type, path, encoding, recordLength, recordType, header, trailer, records',
    );
    expect(
      problems.some((p) =>
        p.startsWith(
          'source.records["2"].colums is not a known setting (did you mean source.records["2"].columns?)',
        ),
      ),
    ).to.equal(true);
    expect(
      problems.some((p) => p.startsWith('source.records["2"].fields[14].lenght is not a known setting')),
    ).to.equal(true);
    expect(problems).to.include(
      'coverage.fromReport needs source.header.period: the header fields that declare the period',
    );
    expect(problemsOf({ ...cielo, source: { ...source, recordLength: 200 } })).to.include(
      'source.records["2"].fields[13] (Número único da transação) ends at 217, past the record length 200',
    );
  });

  it('refuses a period taken from the header without a trailer that proves the file whole', () => {
    const withPeriod = {
      ...source,
      header: {
        ...source.header!,
        period: { from: 'Período inicial', to: 'Período final', dateFormat: 'yyyyMMdd' },
      },
    };
    expect(problemsOf({ ...cielo, coverage: { fromReport: true }, source: withPeriod })).to.deep.equal([]);
    const { trailer: _trailer, ...noTrailer } = withPeriod;
    expect(problemsOf({ ...cielo, coverage: { fromReport: true }, source: noTrailer })).to.include(
      'coverage.fromReport needs source.trailer with its count: without it a file cut short still declares its whole period',
    );
  });
});
