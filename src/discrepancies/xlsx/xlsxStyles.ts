/**
 * The workbook's cell styles (`xl/styles.xml`) and the index a cell's `s` attribute gives for each. Index 0
 * is the default every spreadsheet expects; the others are fixed, so a cell picks its style by number.
 */
export const STYLE = {
  /** Bold, text format: the header row. */
  header: 1,
  /** Text format (`@`): a text cell someone edits stays text (a reference typed again is not a number). */
  text: 2,
  /** `0`: ids, whole numbers shown in full. */
  integer: 3,
  /** `yyyy-mm-dd hh:mm:ss`: instants, in UTC. */
  dateTime: 4,
  /** General: an amount whose currency's minor unit is not known. */
  generalNumber: 0,
} as const;

/** Amounts are shown with 0 to this many decimals (`#,##0`, `#,##0.0`, ... `#,##0.000000000000000`). */
export const MAX_AMOUNT_DECIMALS = 15;
const FIRST_AMOUNT_STYLE = 5;
/** Custom number formats are numbered from 164 (ECMA-376 Part 1, 18.8.30: 0..163 are built in). */
const DATE_TIME_FORMAT = 164;
const FIRST_AMOUNT_FORMAT = 165;

/** The style of an amount shown with `decimals` decimals, 0..{@link MAX_AMOUNT_DECIMALS}. */
export function amountStyle(decimals: number): number {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > MAX_AMOUNT_DECIMALS)
    throw new RangeError(`an amount style has 0 to ${MAX_AMOUNT_DECIMALS} decimals (got ${decimals})`);
  return FIRST_AMOUNT_STYLE + decimals;
}

const AMOUNT_DECIMALS = Array.from({ length: MAX_AMOUNT_DECIMALS + 1 }, (_, decimals) => decimals);
const amountFormat = (decimals: number) => (decimals ? `#,##0.${'0'.repeat(decimals)}` : '#,##0');

/** `xl/styles.xml`: one font plus bold, the fills and border Excel requires, and the styles of {@link STYLE}. */
export const STYLES_XML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">
<numFmts count="${1 + AMOUNT_DECIMALS.length}"><numFmt numFmtId="${DATE_TIME_FORMAT}" formatCode="yyyy-mm-dd hh:mm:ss"/>${AMOUNT_DECIMALS.map((d) => `<numFmt numFmtId="${FIRST_AMOUNT_FORMAT + d}" formatCode="${amountFormat(d)}"/>`).join('')}</numFmts>
<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>
<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>
<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>
<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>
<cellXfs count="${FIRST_AMOUNT_STYLE + AMOUNT_DECIMALS.length}">
<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>
<xf numFmtId="49" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1" applyNumberFormat="1"/>
<xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>
<xf numFmtId="1" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>
<xf numFmtId="${DATE_TIME_FORMAT}" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>
${AMOUNT_DECIMALS.map((d) => `<xf numFmtId="${FIRST_AMOUNT_FORMAT + d}" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>`).join('\n')}
</cellXfs>
<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>
</styleSheet>
`;
