import { expect } from 'chai';
import { identifierText, mangledIdentifier, TRIM_CHARACTERS } from '../../src/shared/identifierText.js';

describe('report identifiers: trimmed, blank is none, scientific notation refused', () => {
  it('TRIM_CHARACTERS (what SQL btrim is given) is exactly what String.prototype.trim removes', () => {
    const trimmed: string[] = [];
    for (let unit = 0; unit <= 0xffff; unit++) {
      const char = String.fromCharCode(unit);
      if (`${char}x`.trim() === 'x') trimmed.push(char);
    }
    expect([...TRIM_CHARACTERS].sort()).to.deep.equal(trimmed.sort());
  });

  it('trims every surrounding blank and reads a blank one as no identifier', () => {
    expect(identifierText(' order-2001\u00a0')).to.equal('order-2001');
    expect(identifierText('\t \u3000')).to.equal(null);
    expect(identifierText('')).to.equal(null);
    expect(identifierText('a b')).to.equal('a b');
  });

  it('names what a spreadsheet wrote in scientific notation, and only that', () => {
    for (const value of ['1.23457E+19', '8,81500E+15', '1E+19', '4.5e-07'])
      expect(mangledIdentifier(value), value).to.be.a('string');
    for (const value of ['2E10', 'order-1E+5', '8815000000001001', 'E+19', 'ch_1E+19'])
      expect(mangledIdentifier(value), value).to.equal(undefined);
  });
});
