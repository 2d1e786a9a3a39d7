/**
 * The parts of a one-sheet SpreadsheetML package besides the sheet and its styles (ECMA-376 Part 1, 12 and
 * 18.2; Part 2 for the content types and relationships): the least Excel, LibreOffice and Google Sheets
 * need to open it. Part names are fixed; {@link XLSX_PARTS} is what the package holds.
 */
export const XLSX_PARTS = {
  contentTypes: '[Content_Types].xml',
  rootRelationships: '_rels/.rels',
  workbook: 'xl/workbook.xml',
  workbookRelationships: 'xl/_rels/workbook.xml.rels',
  styles: 'xl/styles.xml',
  sheet: 'xl/worksheets/sheet1.xml',
} as const;

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const RELATIONSHIPS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const OFFICE_RELATIONSHIP = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

export const CONTENT_TYPES_XML =
  XML_DECLARATION +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  `<Override PartName="/${XLSX_PARTS.workbook}" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
  `<Override PartName="/${XLSX_PARTS.sheet}" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
  `<Override PartName="/${XLSX_PARTS.styles}" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>` +
  '</Types>';

export const ROOT_RELATIONSHIPS_XML =
  XML_DECLARATION +
  `<Relationships xmlns="${RELATIONSHIPS}">` +
  `<Relationship Id="rId1" Type="${OFFICE_RELATIONSHIP}/officeDocument" Target="${XLSX_PARTS.workbook}"/>` +
  '</Relationships>';

export const WORKBOOK_RELATIONSHIPS_XML =
  XML_DECLARATION +
  `<Relationships xmlns="${RELATIONSHIPS}">` +
  `<Relationship Id="rId1" Type="${OFFICE_RELATIONSHIP}/worksheet" Target="worksheets/sheet1.xml"/>` +
  `<Relationship Id="rId2" Type="${OFFICE_RELATIONSHIP}/styles" Target="styles.xml"/>` +
  '</Relationships>';

/** The sheet's name, as its tab shows it. */
const SHEET_NAME = 'Discrepancies';

/**
 * `xl/workbook.xml`: the one sheet, and the hidden name Excel keeps for the sheet's autofilter range
 * (`filterRange`, e.g. `A1:N7`; Excel writes it, and some of its versions look for it).
 */
export function workbookXml(filterRange: string): string {
  const absolute = filterRange.replace(/([A-Z]+)(\d+)/g, '$$$1$$$2');
  return (
    XML_DECLARATION +
    `<workbook xmlns="${MAIN}" xmlns:r="${OFFICE_RELATIONSHIP}">` +
    '<bookViews><workbookView activeTab="0"/></bookViews>' +
    `<sheets><sheet name="${SHEET_NAME}" sheetId="1" r:id="rId1"/></sheets>` +
    '<definedNames><definedName name="_xlnm._FilterDatabase" localSheetId="0" hidden="1">' +
    `${SHEET_NAME}!${absolute}</definedName></definedNames>` +
    '</workbook>'
  );
}
