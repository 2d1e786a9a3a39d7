/** Finance review of discrepancies: listing, detail, the review workflow, and exports. */
export { amountCell, neutraliseCell } from './csvCells.js';
export {
  type DiscrepancyJson,
  discrepanciesJson,
  discrepancyJson,
  writeDiscrepanciesJson,
} from './discrepanciesJson.js';
export { isDiscrepancyId } from './discrepancyIds.js';
export { DISCREPANCY_SORTS, type DiscrepancySort, isDiscrepancySort } from './discrepancyQuery.js';
export type * from './discrepancyTypes.js';
export { ActorRequiredError } from './errors/ActorRequiredError.js';
export { DiscrepancyNotFoundError } from './errors/DiscrepancyNotFoundError.js';
export { DiscrepancyTransitionError, type RefusedDiscrepancy } from './errors/DiscrepancyTransitionError.js';
export { NoteRequiredError } from './errors/NoteRequiredError.js';
export { escapeHtml } from './escapeHtml.js';
export { getDiscrepancy, getHistory, requireDiscrepancy } from './getDiscrepancy.js';
export { streamDiscrepanciesKeyset } from './keysetDiscrepancies.js';
export {
  countDiscrepancies,
  DEFAULT_PAGE_SIZE,
  listDiscrepancies,
  MAX_PAGE_SIZE,
} from './listDiscrepancies.js';
export { renderHtmlReport } from './renderHtmlReport.js';
export { AGE_BUCKETS, type AgeBucket, type ReportData, reportData } from './reportData.js';
export { assign, type ReviewInput, reviewDiscrepancies } from './reviewDiscrepancies.js';
export { STREAM_BATCH_SIZE, streamDiscrepancies } from './streamDiscrepancies.js';
export { allowedActions, canApply, isReviewAction, REVIEW_ACTIONS, TRANSITIONS } from './transitions.js';
export { CSV_COLUMNS, writeDiscrepanciesCsv } from './writeDiscrepanciesCsv.js';
export { terminalSafe, writeDiscrepancyTable } from './writeDiscrepancyTable.js';
