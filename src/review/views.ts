import type {
  DiscrepancyDetail,
  DiscrepancySummary,
  ReviewAction,
} from '../discrepancies/discrepancyTypes.js';
import { allowedActions } from '../discrepancies/transitions.js';
import type { DiscrepancyStatus } from '../status.js';
import type { Attempt } from '../types.js';
import { formatAge, formatAmount, formatInstant, humanise } from './format.js';
import { html, type SafeHtml, trusted } from './html.js';
import { KINDS, type ParsedFilter, type SortColumn, STATUSES } from './reviewFilter.js';

/** A one-shot message shown on the next page (after a redirect). */
export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

/** Who is looking: a signed-in person (with the CSRF token forms must carry) or a script (Bearer). */
export interface Viewer {
  csrf: string | null;
  name: string | null;
  /** Signed in through the login form (shows "Sign out"). */
  session: boolean;
}

const STYLE = trusted(`
:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--brand:#102a43;--accent:#2680c2}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--bg)}
a{color:var(--accent)}
header.top{background:var(--brand);color:#fff;display:flex;align-items:center;gap:28px;padding:0 28px;height:54px}
header.top .brand{font-weight:700;font-size:16px;color:#fff;text-decoration:none;letter-spacing:.01em}
header.top .brand span{font-weight:400;color:#9fb3c8;margin-left:6px}
header.top nav{display:flex;gap:18px;flex:1}
header.top nav a{color:#d9e2ec;text-decoration:none;padding:17px 0 15px;border-bottom:2px solid transparent}
header.top nav a.on{color:#fff;border-bottom-color:#62b0e8}
header.top .who{color:#bcccdc;font-size:13px;display:flex;gap:12px;align-items:center}
header.top .who button{background:none;border:1px solid #486581;color:#d9e2ec;border-radius:6px;padding:4px 10px;cursor:pointer;font:inherit;font-size:12px}
main{max-width:1440px;margin:0 auto;padding:22px 28px 48px}
h1{font-size:21px;margin:0}
h2{font-size:15px;margin:0 0 12px}
.head{display:flex;align-items:baseline;gap:14px;margin-bottom:14px;flex-wrap:wrap}
.head .spacer{flex:1}
.muted{color:var(--muted)}
.small{font-size:12px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin-bottom:16px;box-shadow:0 1px 2px rgba(16,42,67,.04)}
.flash{border-radius:8px;padding:10px 14px;margin-bottom:14px;border:1px solid}
.flash.ok{background:#effcf6;border-color:#8eedc7;color:#014d40}
.flash.error{background:#fff5f5;border-color:#f5b5b5;color:#8a1c1c}
form.filters{display:flex;gap:12px;flex-wrap:wrap;align-items:flex-end}
form.filters select{max-width:200px}
form.filters input[type=search]{width:190px}
label{display:flex;flex-direction:column;gap:4px;font-size:12px;color:var(--muted);font-weight:600}
input,select,textarea{font:inherit;font-size:14px;color:var(--ink);border:1px solid #cbd2d9;border-radius:6px;padding:6px 8px;background:#fff}
input[type=checkbox]{width:16px;height:16px}
textarea{min-height:70px;width:100%;resize:vertical}
button,.button{font:inherit;font-size:13px;font-weight:600;border-radius:6px;padding:7px 14px;border:1px solid #9fb3c8;background:#fff;color:var(--ink);cursor:pointer;text-decoration:none;display:inline-block}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.good{background:#0c6b58;border-color:#0c6b58;color:#fff}
button.quiet{background:#f0f4f8}
.bulk{display:flex;gap:10px;align-items:flex-end;flex-wrap:wrap;padding:10px 12px;background:#f8fafc;border:1px solid var(--line);border-bottom:0;border-radius:10px 10px 0 0}
.bulk .label{font-weight:600;font-size:13px;align-self:center}
.tablewrap{background:#fff;border:1px solid var(--line);border-radius:0 0 10px 10px;overflow-x:auto}
.tablewrap.solo{border-radius:10px}
table{width:100%;border-collapse:collapse}
th,td{padding:9px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);background:#f8fafc;white-space:nowrap}
thead th a{color:inherit;text-decoration:none}
thead th a:hover{color:var(--accent)}
thead th .arrow{color:var(--accent)}
tbody tr:nth-child(even){background:#fbfcfd}
tbody tr:hover{background:#eef6fc}
tbody tr:last-child td{border-bottom:0}
.nowrap{white-space:nowrap}
td.errorcell{min-width:160px;overflow-wrap:anywhere}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.amount{font-weight:600}
.cur{display:inline-block;min-width:2.6em;margin-left:6px;color:var(--muted);font-weight:500;font-size:12px;text-align:left}
td.id a{font-weight:600;text-decoration:none}
td.summary{min-width:220px;max-width:420px;color:#3e4c59}
td.refs .ref{max-width:170px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;word-break:normal}
.ref{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
.badge{display:inline-block;padding:2px 9px;border-radius:999px;font-size:12px;font-weight:600;white-space:nowrap;border:1px solid transparent}
.s-open{background:#ffe3e3;color:#a61b1b;border-color:#ffbdbd}
.s-acknowledged{background:#fff3c4;color:#8d2b0b;border-color:#fce588}
.s-resolved{background:#c6f7e2;color:#014d40;border-color:#8eedc7}
.s-dismissed{background:#e4e7eb;color:#3e4c59;border-color:#cbd2d9}
.kind{display:inline-block;font-size:12px;padding:1px 8px;border-radius:4px;background:#f0f4f8;color:#243b53;border-left:3px solid #829ab1;white-space:nowrap}
.k-duplicate_execution{border-left-color:#d64545}
.k-amount_mismatch,.k-currency_mismatch{border-left-color:#f0b429}
.k-missing_at_partner{border-left-color:#9446ed}
.k-orphan_partner_record{border-left-color:#2680c2}
.k-unresolved{border-left-color:#de911d}
.k-late_completion{border-left-color:#3ebd93}
.overview{display:flex;gap:12px;margin-bottom:16px;flex-wrap:wrap}
.tile{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 16px;min-width:120px;display:flex;flex-direction:column;text-decoration:none;color:var(--ink);box-shadow:0 1px 2px rgba(16,42,67,.04)}
a.tile:hover{border-color:#9fb3c8}
.tile.on{border-color:var(--accent);box-shadow:0 0 0 1px var(--accent) inset}
.tile.wide{flex:1;min-width:300px}
.tlabel{font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600}
.tvalue{font-size:24px;font-weight:700;font-variant-numeric:tabular-nums}
.money{display:flex;gap:22px;flex-wrap:wrap;margin-top:4px;font-size:19px;font-variant-numeric:tabular-nums}
.money .m{white-space:nowrap}
.timeline{list-style:none;margin:0;padding:0 0 0 16px;border-left:2px solid var(--line)}
.timeline li{position:relative;padding:0 0 16px 12px}
.timeline li:last-child{padding-bottom:0}
.timeline li::before{content:"";position:absolute;left:-24px;top:3px;width:10px;height:10px;border-radius:50%;background:#9fb3c8;border:3px solid #fff}
.timeline li:last-child::before{background:var(--accent)}
.timeline .meta{font-size:12.5px;color:var(--muted);margin-top:4px}
.timeline .meta strong{color:var(--ink)}
.timeline .note{margin-top:4px;white-space:pre-wrap;overflow-wrap:anywhere}
.pager{display:flex;gap:10px;align-items:center;justify-content:space-between;margin-top:12px}
.pager .links{display:flex;gap:8px}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:14px 24px;margin:0}
.facts dt{font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600}
.facts dd{margin:2px 0 0}
.risk{font-size:26px;font-weight:700;font-variant-numeric:tabular-nums}
.risk .cur{font-size:15px}
.grid2{display:grid;grid-template-columns:minmax(0,2fr) minmax(320px,1fr);gap:16px;align-items:start}
.actions .row{display:flex;gap:12px;flex-wrap:wrap;margin-top:10px}
.actions .row label{flex:1;min-width:140px}
.actions .buttons{display:flex;gap:8px;margin-top:12px;flex-wrap:wrap}
pre{background:#f8fafc;border:1px solid var(--line);border-radius:6px;padding:10px;overflow:auto;font-size:12px}
.empty{padding:28px;text-align:center;color:var(--muted)}
.login{max-width:380px;margin:9vh auto}
.login form{display:flex;flex-direction:column;gap:14px}
@media (max-width:900px){.grid2{grid-template-columns:1fr}}
@media print{header.top,form.filters,.bulk,.actions,.pager .links,input[type=checkbox],.noprint{display:none!important}body{background:#fff}.card,.tablewrap{box-shadow:none;border-color:#ccc}}
`);

/** The page frame: header with navigation, flash, content. */
export function layout(options: {
  title: string;
  viewer: Viewer | null;
  active?: 'list' | 'report';
  flash?: Flash | null;
  body: SafeHtml;
}): string {
  const { viewer } = options;
  const nav = viewer
    ? html`<nav>
        <a href="/" class="${options.active === 'list' ? 'on' : ''}">Discrepancies</a>
        <a href="/report" class="${options.active === 'report' ? 'on' : ''}">Report</a>
      </nav>
      <div class="who">
        ${viewer.name ? html`<span>Signed in as <strong>${viewer.name}</strong></span>` : ''}
        ${
          viewer.session
            ? html`<form method="post" action="/logout">
                <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
                <button type="submit">Sign out</button>
              </form>`
            : ''
        }
      </div>`
    : html`<nav></nav>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${options.title} · intent-ledger review</title>
<style>${STYLE}</style>
</head>
<body>
<header class="top">
  <a class="brand" href="/">intent-ledger<span>finance review</span></a>
  ${nav}
</header>
<main>
${options.flash ? html`<div class="flash ${options.flash.kind}" role="${options.flash.kind === 'error' ? 'alert' : 'status'}">${options.flash.text}</div>` : ''}
${options.body}
</main>
</body>
</html>
`.value;
}

export function loginPage(options: { next: string; error?: string }): string {
  return layout({
    title: 'Sign in',
    viewer: null,
    body: html`<div class="login card">
  <h1>Sign in</h1>
  <p class="muted">Enter the review token printed by <code>intent-ledger serve</code> (or set in <code>REVIEW_TOKEN</code>).</p>
  ${options.error ? html`<div class="flash error" role="alert">${options.error}</div>` : ''}
  <form method="post" action="/login">
    <input type="hidden" name="next" value="${options.next}">
    <label>Access token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
    <button type="submit" class="primary">Sign in</button>
  </form>
</div>`,
  });
}

export function messagePage(options: { title: string; message: string; viewer: Viewer | null }): string {
  return layout({
    title: options.title,
    viewer: options.viewer,
    body: html`<div class="card"><h1>${options.title}</h1><p>${options.message}</p><p><a href="/">Back to the list</a></p></div>`,
  });
}

export function logoutPage(viewer: Viewer): string {
  return layout({
    title: 'Sign out',
    viewer,
    body: html`<div class="login card">
  <h1>Sign out?</h1>
  <form method="post" action="/logout">
    <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
    <button type="submit" class="primary">Sign out</button>
  </form>
</div>`,
  });
}

function statusBadge(status: DiscrepancyStatus): SafeHtml {
  return html`<span class="badge s-${status}">${humanise(status)}</span>`;
}

function kindTag(kind: string): SafeHtml {
  return html`<span class="kind k-${kind}">${humanise(kind)}</span>`;
}

function amountCell(amount: string | null, currency: string | null): SafeHtml {
  if (amount === null) return html`<span class="muted">unknown</span>`;
  return html`${formatAmount(amount, currency)}<span class="cur">${currency ?? ''}</span>`;
}

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
  const current = parsed.filter.sort ?? 'createdAt';
  const currentDir = parsed.filter.direction ?? (parsed.filter.sort ? DEFAULT_DIRECTION[current] : 'desc');
  const active = current === column;
  const dir = active ? (currentDir === 'asc' ? 'desc' : 'asc') : DEFAULT_DIRECTION[column];
  const href = `/${query(parsed.params, { sort: column, dir, page: null })}`;
  const ariaSort = active ? (currentDir === 'asc' ? 'ascending' : 'descending') : 'none';
  return html`<th class="${className}" aria-sort="${ariaSort}"><a href="${href}">${label}${
    active ? html` <span class="arrow">${currentDir === 'asc' ? '▲' : '▼'}</span>` : ''
  }</a></th>`;
}

function option(value: string, label: string, selected: boolean): SafeHtml {
  return html`<option value="${value}"${selected ? trusted(' selected') : ''}>${label}</option>`;
}

/** Totals above the list, for the filter without its status part (from the report's numbers). */
export interface ListOverview {
  statusCounts: { status: DiscrepancyStatus; count: number }[];
  openByCurrency: { currency: string | null; count: number; amountAtRisk: string; withoutAmount: number }[];
}

export interface ListView {
  viewer: Viewer;
  overview: ListOverview | null;
  parsed: ParsedFilter;
  rows: DiscrepancySummary[];
  total: number;
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
    ...STATUSES.map((s): [string, string] => [s, humanise(s)]),
  ];
  if (statusValue && !statusChoices.some(([value]) => value === statusValue))
    statusChoices.push([statusValue, statusValue.split(',').map(humanise).join(' or ')]);
  const partnerValue = (parsed.filter.partner ?? []).join(',');
  const partnerChoices = [...view.partners];
  if (partnerValue && !partnerChoices.includes(partnerValue)) partnerChoices.push(partnerValue);
  const kindValue = (parsed.filter.kind ?? []).join(',');
  const kindChoices: [string, string][] = KINDS.map((k): [string, string] => [k, humanise(k)]);
  if (kindValue && !KINDS.includes(kindValue as never))
    kindChoices.push([kindValue, kindValue.split(',').map(humanise).join(' or ')]);

  const first = total === 0 ? 0 : parsed.offset + 1;
  const last = parsed.offset + rows.length;
  const pages = Math.max(1, Math.ceil(total / parsed.limit));
  const exportHref = `/export.csv${query(parsed.params, { page: null })}`;
  const reportHref = `/report${query(parsed.params, { page: null, sort: null, dir: null })}`;
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
    : html`<div class="empty">No discrepancies match this filter.</div>`;

  const bulk = html`<div class="bulk noprint">
    <span class="label">With selected:</span>
    <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
    <input type="hidden" name="return" value="${returnTo}">
    <label>Note <input type="text" name="note" size="36" placeholder="what was decided and why" required></label>
    <label>Your name <input type="text" name="by" value="${viewer.name ?? ''}" size="16" autocomplete="name" required></label>
    <button type="submit" name="action" value="acknowledge">Acknowledge</button>
    <button type="submit" name="action" value="resolve" class="good">Resolve</button>
  </div>`;

  const pager = html`<div class="pager">
  <span class="muted">${total === 0 ? 'Nothing to show' : `Showing ${first}–${last} of ${total}`}${pages > 1 ? ` · page ${parsed.page} of ${pages}` : ''}</span>
  <span class="links">
    ${parsed.page > 1 ? html`<a class="button" href="/${query(parsed.params, { page: String(parsed.page - 1) })}" rel="prev">← Previous</a>` : ''}
    ${parsed.page < pages ? html`<a class="button" href="/${query(parsed.params, { page: String(parsed.page + 1) })}" rel="next">Next →</a>` : ''}
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
  <a class="button" href="${exportHref}" download>Export CSV</a>
  <a class="button" href="${reportHref}">Report</a>
</div>
${parsed.errors.length ? html`<div class="flash error" role="alert">Ignored part of the filter: ${parsed.errors.join('; ')}</div>` : ''}
${overview}
${filters}
${
  rows.length
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
    html`<a class="tile${current === status ? ' on' : ''}" href="/${query(parsed.params, { status, page: null })}">
      <span class="tlabel">${humanise(status)}</span><span class="tvalue">${count(status)}</span></a>`;
  const money = overview.openByCurrency.filter((row) => row.currency !== null || row.amountAtRisk !== '0');
  return html`<div class="overview">
  ${tile('open')}${tile('acknowledged')}${tile('resolved')}${tile('dismissed')}
  <div class="tile wide"><span class="tlabel">Open amount at risk</span>
    <span class="money">${
      money.length
        ? money.map(
            (row) =>
              html`<span class="m"><strong>${formatAmount(row.amountAtRisk, row.currency)}</strong><span class="cur">${row.currency ?? '(no currency)'}</span></span>`,
          )
        : html`<span class="muted">nothing open</span>`
    }</span>
  </div>
</div>`;
}

export interface DetailView {
  viewer: Viewer;
  detail: DiscrepancyDetail;
  flash: Flash | null;
  /** What the person typed, kept when the action was refused. */
  form?: { note?: string; by?: string; assignee?: string };
  now?: Date;
}

const ACTION_LABEL: Record<ReviewAction, string> = {
  acknowledge: 'Acknowledge',
  resolve: 'Resolve',
  dismiss: 'Dismiss',
};

export function detailPage(view: DetailView): string {
  const { detail: d, viewer } = view;
  const now = view.now ?? new Date();
  const actions = allowedActions(d.status);
  const form = view.form ?? {};

  const facts = html`<dl class="facts">
  <div><dt>Amount at risk</dt><dd class="risk">${amountCell(d.amountAtRisk, d.currency)}</dd></div>
  <div><dt>Partner</dt><dd>${d.partner}</dd></div>
  <div><dt>Our reference</dt><dd class="ref">${d.reference ?? '—'}</dd></div>
  <div><dt>Partner reference</dt><dd class="ref">${d.partnerReference ?? '—'}</dd></div>
  <div><dt>Opened</dt><dd>${formatInstant(d.createdAt)} <span class="muted small">(${formatAge(d.createdAt, now)} ago)</span></dd></div>
  <div><dt>Last change</dt><dd>${formatInstant(d.updatedAt)}</dd></div>
  <div><dt>Assignee</dt><dd>${d.assignee ?? '—'}</dd></div>
  <div><dt>Attempt</dt><dd>${d.attempt ?? '—'}</dd></div>
</dl>`;

  const actionCard = actions.length
    ? html`<div class="card actions">
  <h2>Decide</h2>
  <form method="post" action="/discrepancies/${d.id}/review">
    <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
    <label>Note (required) <textarea name="note" placeholder="What was checked, what was decided and why" required>${form.note ?? ''}</textarea></label>
    <div class="row">
      <label>Your name <input type="text" name="by" value="${form.by ?? viewer.name ?? ''}" required autocomplete="name"></label>
      <label>Assign to (optional) <input type="text" name="assignee" value="${form.assignee ?? ''}"></label>
    </div>
    <div class="buttons">
      ${actions.map(
        (action) =>
          html`<button type="submit" name="action" value="${action}" class="${action === 'resolve' ? 'good' : action === 'acknowledge' ? 'primary' : ''}">${ACTION_LABEL[action]}</button>`,
      )}
    </div>
  </form>
</div>`
    : html`<div class="card"><h2>Decision</h2><p>This discrepancy is ${statusBadge(d.status)}: nothing more to do.</p></div>`;

  const history = html`<div class="card">
  <h2>History</h2>
  <ol class="timeline">
    ${d.history.map(
      (h) => html`<li>
      <div>${h.fromStatus ? html`${statusBadge(h.fromStatus)} → ` : ''}${statusBadge(h.toStatus)}</div>
      <div class="meta"><strong class="actor">${h.actor}</strong> · <time datetime="${h.at.toISOString()}">${formatInstant(h.at)}</time>${h.assignee ? html` · assigned to ${h.assignee}` : ''}</div>
      ${h.note ? html`<div class="note">${h.note}</div>` : ''}
    </li>`,
    )}
  </ol>
</div>`;

  const intent = d.intent
    ? html`<div class="card">
  <h2>Intent #${d.intent.id}</h2>
  <dl class="facts">
    <div><dt>Operation</dt><dd>${d.intent.operation}</dd></div>
    <div><dt>Key</dt><dd class="ref">${d.intent.key}</dd></div>
    <div><dt>Status</dt><dd>${humanise(d.intent.status)}</dd></div>
    <div><dt>Amount</dt><dd class="num" style="text-align:left">${amountCell(d.intent.amount, d.intent.currency)}</dd></div>
    <div><dt>Partner reference</dt><dd class="ref">${d.intent.partnerReference ?? '—'}</dd></div>
    <div><dt>Resolved by</dt><dd>${d.intent.resolvedBy ?? '—'}</dd></div>
  </dl>
  <h2 style="margin-top:16px">Attempts</h2>
  ${attemptsTable(d.intent.attempts)}
</div>`
    : html`<div class="card"><h2>Intent</h2><p class="muted">No intent of ours is behind this discrepancy.</p></div>`;

  const partnerRows = html`<div class="card">
  <h2>Partner rows</h2>
  ${
    d.partnerRecords.length
      ? html`<div class="tablewrap solo"><table>
    <thead><tr><th>Source</th><th class="num">Line</th><th>Reference</th><th>Partner reference</th><th class="num">Amount</th><th>Executed (UTC)</th><th>Run</th></tr></thead>
    <tbody>${d.partnerRecords.map(
      (r) => html`<tr>
      <td class="ref">${r.source}</td>
      <td class="num">${r.line}</td>
      <td class="ref">${r.reference ?? '—'}</td>
      <td class="ref">${r.partnerReference ?? '—'}</td>
      <td class="num">${amountCell(r.amount, r.currency)}</td>
      <td class="nowrap">${formatInstant(r.executedAt, false)}</td>
      <td>#${r.runId}</td>
    </tr>`,
    )}</tbody>
  </table></div>`
      : html`<p class="muted">The partner reported no row for this.</p>`
  }
</div>`;

  const run = d.run
    ? html`<div class="card">
  <h2>Reconciliation run #${d.run.id}</h2>
  <dl class="facts">
    <div><dt>Source</dt><dd class="ref">${d.run.source}</dd></div>
    <div><dt>Status</dt><dd>${humanise(d.run.status)}</dd></div>
    <div><dt>Started</dt><dd>${formatInstant(d.run.startedAt)}</dd></div>
    <div><dt>Finished</dt><dd>${d.run.finishedAt ? formatInstant(d.run.finishedAt) : '—'}</dd></div>
  </dl>
</div>`
    : html`<div class="card"><h2>Reconciliation run</h2><p class="muted">Not raised by a reconciliation run.</p></div>`;

  return layout({
    title: `Discrepancy ${d.id}`,
    viewer,
    active: 'list',
    flash: view.flash,
    body: html`<p class="noprint small"><a href="/">← All discrepancies</a></p>
<div class="head">
  <h1>Discrepancy #${d.id}</h1>
  ${kindTag(d.kind)}
  ${statusBadge(d.status)}
</div>
<div class="card">
  <p style="margin-top:0;font-size:15px">${d.summary}</p>
  ${facts}
</div>
<div class="grid2">
  <div>
    ${intent}
    ${partnerRows}
    ${run}
    <details class="card"><summary>Technical details</summary><pre>${JSON.stringify(d.details, null, 2)}</pre></details>
  </div>
  <div>
    ${actionCard}
    ${history}
  </div>
</div>`,
  });
}

function attemptsTable(attempts: Attempt[]): SafeHtml {
  if (!attempts.length) return html`<p class="muted">No attempts recorded.</p>`;
  return html`<div class="tablewrap solo"><table>
  <thead><tr><th class="num">#</th><th>Started (UTC)</th><th>Ended (UTC)</th><th>Outcome</th><th>Partner reference</th><th>Reconciler</th><th>Error</th></tr></thead>
  <tbody>${attempts.map(
    (a) => html`<tr>
    <td class="num">${a.attempt}</td>
    <td class="nowrap">${formatInstant(a.startedAt, false)}</td>
    <td class="nowrap">${a.endedAt ? formatInstant(a.endedAt, false) : html`<span class="muted">—</span>`}</td>
    <td>${a.outcome ? humanise(a.outcome) : html`<span class="muted">none (worker died?)</span>`}</td>
    <td class="ref">${a.partnerReference ?? '—'}</td>
    <td>${a.resolution ? `${humanise(a.resolution)} (${a.resolvedBy ?? 'reconciler'})` : '—'}</td>
    <td class="small errorcell">${a.error ? JSON.stringify(a.error) : ''}</td>
  </tr>`,
  )}</tbody>
</table></div>`;
}
