/**
 * The frame every review page is drawn in (header with navigation, flash message, the stylesheet) and the
 * small pieces several pages share: status badge, kind tag, amount cell. Pages are built with the escaping
 * `html` template of `html.ts`; the stylesheet is inline because the security headers allow no other source.
 */

import { formatAmount } from '../shared/formatAmount.js';
import type { DiscrepancyStatus } from '../shared/status.js';
import { humanise } from './format.js';
import { html, type SafeHtml, trusted } from './html.js';

/** A one-shot message shown on the next page (after a redirect). */
export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

/** Who is looking: a signed-in person (with the CSRF token forms must carry) or a script (Bearer). */
export interface Viewer {
  csrf: string | null;
  /** The authenticated person's name (what the history records for them). */
  name: string | null;
  role?: string;
  /** Signed in through the login form (shows "Sign out"). */
  session: boolean;
  /** A resolver or admin: the review forms are shown (the server refuses changes from anyone else anyway). */
  canDecide: boolean;
  /** Signed in with the shared REVIEW_TOKEN: nobody in particular, so never one of the four eyes. */
  sharedToken?: boolean;
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
.k-ambiguous_match{border-left-color:#9446ed}
.overview{display:flex;gap:12px;margin-bottom:16px;flex-wrap:wrap}
.tile{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 16px;min-width:120px;display:flex;flex-direction:column;text-decoration:none;color:var(--ink);box-shadow:0 1px 2px rgba(16,42,67,.04)}
a.tile:hover{border-color:#9fb3c8}
.tile.on{border-color:var(--accent);box-shadow:0 0 0 1px var(--accent) inset}
.tile.wide{flex:1;min-width:300px}
.tlabel{font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600}
.tvalue{font-size:24px;font-weight:700;font-variant-numeric:tabular-nums}
.money{display:flex;gap:22px;flex-wrap:wrap;margin-top:4px;font-size:19px;font-variant-numeric:tabular-nums}
.money .m{white-space:nowrap}
.money .ack{margin-left:8px;color:var(--muted);font-size:12px}
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
        ${viewer.name ? html`<span>Signed in as <strong class="who">${viewer.name}</strong>${viewer.role ? html` <span class="role">(${viewer.role})</span>` : ''}</span>` : ''}
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

export function statusBadge(status: DiscrepancyStatus): SafeHtml {
  return html`<span class="badge s-${status}">${humanise(status)}</span>`;
}

export function kindTag(kind: string): SafeHtml {
  return html`<span class="kind k-${kind}">${humanise(kind)}</span>`;
}

export function amountCell(amount: string | null, currency: string | null): SafeHtml {
  if (amount === null) return html`<span class="muted">unknown</span>`;
  return html`${formatAmount(amount, currency)}<span class="cur">${currency ?? ''}</span>`;
}
