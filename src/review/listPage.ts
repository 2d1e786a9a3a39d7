/**
 * The discrepancy list, the site's home page: totals per status and amount at risk (open and acknowledged),
 * the filter form, the sortable table with its bulk acknowledge/resolve form, and paging by cursor (Next →, First page).
 * Every link keeps the filter and sort.
 */
import { orderOf } from '../discrepancies/discrepancyQuery.js';
import type { DiscrepancySummary } from '../discrepancies/discrepancyTypes.js';
import type { CurrencyTotal } from '../discrepancies/summaryData.js';
import { formatAmount } from '../shared/formatAmount.js';
import type { DiscrepancyStatus } from '../shared/status.js';
import { DISCREPANCY_KINDS, DISCREPANCY_STATUSES } from '../shared/status.js';
import { formatAge, formatInstant, humanise } from './format.js';
import { html, type SafeHtml, trusted } from './html.js';
import { amountCell, type Flash, kindTag, layout, statusBadge, type Viewer } from './layout.js';
import type { ParsedFilter, SortColumn } from './reviewFilter.js';

function query(params: URLSearchParams, changes: Record<string, string | null>): string {
  const next = new URLSearchParams(params);
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) next.delete(name);
    else next.set(name, value);
  }
  const text = next.toString();
  return text ? `?${text}` : '?';
}

const DEFAULT_DIRECTION: Record<SortColumn, 'asc' | 'desc'> = {
  createdAt: 'desc',
  amountAtRisk: 'desc',
  partner: 'asc',
  kind: 'asc',
  status: 'asc',
};

function sortHeader(parsed: ParsedFilter, column: SortColumn, label: string, className = ''): SafeHtml {
  // The order the query really uses (a typed `?sort=partner` without `dir` sorts descending, as every sort
  // does by default), so the arrow never says the other way.
  const { sort: current, direction: currentDir } = orderOf(parsed.filter);
  const active = current === column;
  const dir = active ? (currentDir === 'asc' ? 'desc' : 'asc') : DEFAULT_DIRECTION[column];
  const href = `/${query(parsed.params, { sort: column, dir })}`;
  const ariaSort = active ? (currentDir === 'asc' ? 'ascending' : 'descending') : 'none';
  return html`<th class="${className}" aria-sort="${ariaSort}"><a href="${href}">${label}${
    active ? html` <span class="arrow">${currentDir === 'asc' ? '▲' : '▼'}</span>` : ''
  }</a></th>`;
}

function option(value: string, label: string, selected: boolean): SafeHtml {
  return html`<option value="${value}"${selected ? trusted(' selected') : ''}>${label}</option>`;
}

/** Totals above the list, for the filter without its status part (from the report's numbers). */
interface ListOverview {
  statusCounts: { status: DiscrepancyStatus; count: number }[];
  /** Unsettled (open and acknowledged) discrepancies per currency: the money still at risk. */
  atRiskByCurrency: CurrencyTotal[];
}

export interface ListView {
  viewer: Viewer;
  overview: ListOverview | null;
  parsed: ParsedFilter;
  rows: DiscrepancySummary[];
  total: number;
  /** The cursor of the rows after these, null on the last page. */
  next: string | null;
  partners: string[];
  flash: Flash | null;
  now?: Date;
}

export function listPage(view: ListView): string {
  const { parsed, rows, total, viewer } = view;
  const now = view.now ?? new Date();
  const statusValue = (parsed.filter.status ?? []).join(',');
  const statusChoices: [string, string][] = [
    ['', 'All statuses'],
    ['open,acknowledged', 'Open or acknowledged'],
    ...DISCREPANCY_STATUSES.map((s): [string, string] => [s, humanise(s)]),
  ];
  if (statusValue && !statusChoices.some(([value]) => value === statusValue))
    statusChoices.push([statusValue, statusValue.split(',').map(humanise).join(' or ')]);
  const partnerValue = (parsed.filter.partner ?? []).join(',');
  const partnerChoices = [...view.partners];
  if (partnerValue && !partnerChoices.includes(partnerValue)) partnerChoices.push(partnerValue);
  const kindValue = (parsed.filter.kind ?? []).join(',');
  const kindChoices: [string, string][] = DISCREPANCY_KINDS.map((k): [string, string] => [k, humanise(k)]);
  if (kindValue && !DISCREPANCY_KINDS.includes(kindValue as never))
    kindChoices.push([kindValue, kindValue.split(',').map(humanise).join(' or ')]);

  const exportXlsxHref = `/export.xlsx${query(parsed.params, { separator: null })}`;
  const exportHref = `/export.csv${query(parsed.params, { separator: null })}`;
  const exportSemicolonHref = `/export.csv${query(parsed.params, { separator: 'semicolon' })}`;
  const reportHref = `/report${query(parsed.params, { sort: null, dir: null })}`;
  const returnTo = query(parsed.params, {});

  const overview = view.overview ? overviewStrip(view.overview, parsed) : '';

  const filters = html`<form class="filters card" method="get" action="/" role="search">
  <label>Status <select name="status">${statusChoices.map(([value, label]) => option(value, label, value === statusValue))}</select></label>
  <label>Partner <select name="partner">${option('', 'All partners', !partnerValue)}${partnerChoices.map((p) => option(p, p, p === partnerValue))}</select></label>
  <label>Kind <select name="kind">${option('', 'All kinds', !kindValue)}${kindChoices.map(([value, label]) => option(value, label, value === kindValue))}</select></label>
  <label>Opened since <input type="date" name="since" value="${parsed.params.get('since') ?? ''}"></label>
  <label>Reference <input type="search" name="search" value="${parsed.filter.search ?? ''}" placeholder="ours or the partner's"></label>
  ${parsed.filter.sort ? html`<input type="hidden" name="sort" value="${parsed.filter.sort}">` : ''}
  ${parsed.filter.direction ? html`<input type="hidden" name="dir" value="${parsed.filter.direction}">` : ''}
  <button type="submit" class="primary">Apply</button>
  <a class="button quiet" href="/">Reset</a>
</form>`;

  const table = rows.length
    ? html`<table>
  <thead><tr>
    <th class="noprint"><span class="muted" title="Select for a bulk action">✓</span></th>
    <th>#</th>
    ${sortHeader(parsed, 'createdAt', 'Opened (UTC)')}
    ${sortHeader(parsed, 'partner', 'Partner')}
    ${sortHeader(parsed, 'kind', 'Kind')}
    <th>Reference</th>
    <th>Summary</th>
    ${sortHeader(parsed, 'amountAtRisk', 'Amount at risk', 'num')}
    ${sortHeader(parsed, 'status', 'Status')}
  </tr></thead>
  <tbody>
  ${rows.map(
    (row) => html`<tr>
    <td class="noprint"><input type="checkbox" name="ids" value="${row.id}" aria-label="Select discrepancy ${row.id}"></td>
    <td class="id"><a href="/discrepancies/${row.id}">${row.id}</a></td>
    <td class="nowrap"><time datetime="${row.createdAt.toISOString()}">${formatInstant(row.createdAt, false)}</time><div class="muted small">${formatAge(row.createdAt, now)} ago</div></td>
    <td class="nowrap">${row.partner}</td>
    <td>${kindTag(row.kind)}</td>
    <td class="refs"><div class="ref" title="${row.reference ?? ''}">${row.reference ?? '—'}</div>${row.partnerReference ? html`<div class="ref muted" title="${row.partnerReference}">${row.partnerReference}</div>` : ''}</td>
    <td class="summary">${row.summary}</td>
    <td class="num amount">${amountCell(row.amountAtRisk, row.currency)}</td>
    <td class="nowrap">${statusBadge(row.status)}${row.assignee ? html`<div class="small muted assignee">→ ${row.assignee}</div>` : ''}</td>
  </tr>`,
  )}
  </tbody>
</table>`
    : html`<div class="empty">${parsed.after ? 'No more discrepancies after the previous page.' : 'No discrepancies match this filter.'}</div>`;

  const bulk = html`<div class="bulk noprint">
    <span class="label">With selected:</span>
    <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
    <input type="hidden" name="return" value="${returnTo}">
    <label>Note <input type="text" name="note" size="36" placeholder="what was decided and why" required></label>
    <button type="submit" name="action" value="acknowledge">Acknowledge</button>
    <button type="submit" name="action" value="resolve" class="good">Resolve</button>
  </div>`;

  // No page numbers: a page starts after the previous one's last row (exact while people decide), so which
  // numbered page it is would be a guess. `params` holds the filter and sort, never `after`.
  const pager = html`<div class="pager">
  <span class="muted">${total === 0 ? 'Nothing to show' : `Showing ${rows.length} of ${total}${parsed.after ? ', continuing the list' : ''}`}</span>
  <span class="links">
    ${parsed.after ? html`<a class="button" href="/${query(parsed.params, {})}" rel="first">⇤ First page</a>` : ''}
    ${view.next ? html`<a class="button" href="/${query(parsed.params, { after: view.next })}" rel="next">Next →</a>` : ''}
  </span>
</div>`;

  return layout({
    title: 'Discrepancies',
    viewer,
    active: 'list',
    flash: view.flash,
    body: html`<div class="head">
  <h1>Discrepancies</h1>
  <span class="muted">${total} matching</span>
  <span class="spacer"></span>
  <a class="button" href="${exportXlsxHref}" download title="For Excel, LibreOffice and other spreadsheets: every cell keeps its type">Export XLSX</a>
  <a class="button" href="${exportHref}" download title="For programs: a spreadsheet opening a CSV guesses each cell's type">Export CSV</a>
  <a class="button" href="${exportSemicolonHref}" download title="For spreadsheets that use a decimal comma">Export CSV (;)</a>
  <a class="button" href="${reportHref}">Report</a>
</div>
${parsed.errors.length ? html`<div class="flash error" role="alert">Ignored part of the filter: ${parsed.errors.join('; ')}</div>` : ''}
${overview}
${filters}
${
  rows.length && viewer.canDecide
    ? html`<form method="post" action="/bulk">${bulk}<div class="tablewrap">${table}</div></form>`
    : html`<div class="tablewrap solo">${table}</div>`
}
${pager}`,
  });
}

function overviewStrip(overview: ListOverview, parsed: ParsedFilter): SafeHtml {
  const count = (status: DiscrepancyStatus) =>
    overview.statusCounts.find((entry) => entry.status === status)?.count ?? 0;
  const current = (parsed.filter.status ?? []).join(',');
  const tile = (status: DiscrepancyStatus) =>
    html`<a class="tile${current === status ? ' on' : ''}" href="/${query(parsed.params, { status })}">
      <span class="tlabel">${humanise(status)}</span><span class="tvalue">${count(status)}</span></a>`;
  const money = overview.atRiskByCurrency.filter((row) => row.currency !== null || row.amountAtRisk !== '0');
  return html`<div class="overview">
  ${tile('open')}${tile('acknowledged')}${tile('resolved')}${tile('dismissed')}
  <div class="tile wide"><span class="tlabel">Amount at risk (open and acknowledged)</span>
    <span class="money">${
      money.length
        ? money.map(
            (row) =>
              html`<span class="m"><strong>${formatAmount(row.amountAtRisk, row.currency)}</strong><span class="cur">${row.currency ?? '(no currency)'}</span>${
                row.acknowledged.count
                  ? html`<span class="ack">of which acknowledged ${formatAmount(row.acknowledged.amountAtRisk, row.currency)}</span>`
                  : ''
              }</span>`,
          )
        : html`<span class="muted">nothing at risk</span>`
    }</span>
  </div>
</div>`;
}
