import iconv from 'iconv-lite';

/** The DOS end-of-file mark (Ctrl-Z, 0x1A). */
export const DOS_END_OF_FILE = '\x1a';

/**
 * A UTF-8 byte-order mark's three bytes, read one a character (a one-byte encoding; the UTF-8 decoder drops
 * a leading mark itself).
 */
const BOM_AS_BYTES = '\u00ef\u00bb\u00bf';

/**
 * The likely cause of a record of the wrong length: a UTF-8 byte-order mark before the first record, a file
 * written in UTF-8 read in a one-byte encoding (each accented letter two or three characters), or a DOS
 * end-of-file mark glued to the last record, when that accounts for the excess exactly; else what it may be.
 */
export function lengthCause(text: string, recordLength: number, encoding: string): string {
  if (text.endsWith(DOS_END_OF_FILE) && text.length - 1 === recordLength)
    return 'it ends with a DOS end-of-file mark (Ctrl-Z), which is only read past on a line of its own';
  if (text.startsWith(BOM_AS_BYTES) && text.length - 3 === recordLength)
    return 'it starts with the bytes of a UTF-8 byte-order mark (BOM), which the file must not have';
  if (encoding !== 'utf8' && text.length > recordLength) {
    const unbommed = text.startsWith(BOM_AS_BYTES) ? text.slice(3) : text;
    const asUtf8 = iconv.encode(unbommed, encoding).toString('utf8');
    if (!asUtf8.includes('\ufffd') && asUtf8.length === recordLength) {
      return `it is ${recordLength} characters read as UTF-8: the file looks UTF-8 encoded (accented letters take two bytes), not ${encoding}`;
    }
  }
  return 'a cut, padded or shifted record';
}
