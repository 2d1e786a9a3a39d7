/**
 * What may need escaping in a SpreadsheetML text: XML's own `& < >`; CR (an XML parser turns a raw CR into
 * LF, XML 1.0 section 2.11, so it goes as a character reference); characters XML 1.0 cannot carry at all (C0 controls
 * other than tab, LF and CR, lone surrogates, U+FFFE, U+FFFF); and `_xHHHH_` written literally, which a
 * SpreadsheetML reader would decode.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding the control characters XML cannot carry is the point
const NEEDS_ESCAPE = /[&<>\r\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]|_x[0-9a-f]{4}_/i;
const ESCAPE_LITERAL = /^_x[0-9a-f]{4}_/i;

/** `_xHHHH_`: ECMA-376 Part 1, 22.9.2.19 (ST_Xstring), how OOXML writes a UTF-16 unit XML cannot hold. */
function ooxmlEscape(unit: number): string {
  return `_x${unit.toString(16).toUpperCase().padStart(4, '0')}_`;
}

/**
 * `value` as the content of a SpreadsheetML text element (`<t>`), read back by Excel and LibreOffice as
 * exactly `value`, UTF-16 unit for UTF-16 unit: `& < >` as entities, CR as `&#13;`, every unit XML 1.0
 * cannot carry as `_xHHHH_`, and the `_` of a literal `_xHHHH_` in the data as `_x005F_` (so `_x0041_`
 * stays those seven characters instead of becoming `A`). A valid surrogate pair (an emoji, a rare CJK
 * character) is written as it is. Nothing is dropped or replaced.
 */
export function spreadsheetText(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  let out = '';
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    let replacement: string | undefined;
    if (unit === 0x26) replacement = '&amp;';
    else if (unit === 0x3c) replacement = '&lt;';
    else if (unit === 0x3e) replacement = '&gt;';
    else if (unit === 0x0d) replacement = '&#13;';
    else if (unit < 0x20 && unit !== 0x09 && unit !== 0x0a) replacement = ooxmlEscape(unit);
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else replacement = ooxmlEscape(unit);
    } else if ((unit >= 0xdc00 && unit <= 0xdfff) || unit === 0xfffe || unit === 0xffff)
      replacement = ooxmlEscape(unit);
    else if (unit === 0x5f && ESCAPE_LITERAL.test(value.slice(i, i + 7))) replacement = '_x005F_';
    if (replacement !== undefined) {
      out += value.slice(from, i) + replacement;
      from = i + 1;
    }
  }
  return out + value.slice(from);
}
