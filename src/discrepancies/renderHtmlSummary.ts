import Decimal from 'decimal.js';
import { formatAmount } from '../shared/formatAmount.js';
import type { DiscrepancyFilter } from './discrepancyTypes.js';
import { escapeHtml } from './escapeHtml.js';
import type { CurrencyTotal, GroupTotal, SummaryData } from './summaryData.js';

/**
 * The HTML report: one self-contained page (inline CSS and SVG, no script, no external font, image or
 * stylesheet, and a Content-Security-Policy that forbids loading any) with the totals of unsettled (open and
 * acknowledged) discrepancies and amount at risk by currency, partner and kind (one line per currency: amounts of different currencies
 * are never added), an ageing view, bar charts, and the table. Prints on A4 landscape. Every piece of text
 * that came from a partner or a person is HTML-escaped.
 */
export function renderHtmlSummary(data: SummaryData, options: { title?: string } = {}): string {
  const title = options.title ?? 'Discrepancy report';
  const shown = data.rows.length;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<p class="meta">Generated ${escapeHtml(data.generatedAt.toISOString())} &middot; ${escapeHtml(describeFilter(data.filter))}</p>
</header>
<section class="cards">
<div class="card"><div class="big">${formatCount(data.atRisk.count)}</div><div>unsettled discrepancies (${splitCounts(data.atRisk.byCurrency)})</div></div>
${data.atRisk.byCurrency
  .map(
    (t) =>
      `<div class="card"><div class="big">${escapeHtml(formatAmount(t.amountAtRisk, t.currency))} <small>${escapeHtml(currencyLabel(t.currency))}</small></div><div>amount at risk, open and acknowledged (${formatCount(t.count)} unsettled${t.acknowledged.count ? `, of which ${formatCount(t.acknowledged.count)} acknowledged: ${escapeHtml(formatAmount(t.acknowledged.amountAtRisk, t.currency))}` : ''}${t.withoutAmount ? `, ${t.withoutAmount} without amount` : ''})</div></div>`,
  )
  .join('\n')}
<div class="card"><div>${data.statusCounts.map((s) => `${escapeHtml(s.status)}: <b>${formatCount(s.count)}</b>`).join(' &middot; ') || 'no discrepancies'}</div><div>by status</div></div>
</section>
<p class="note">Totals count <b>unsettled</b> discrepancies (open and acknowledged: nothing is settled until resolved or dismissed) matching the partner, kind, date and search filters; amounts are summed per currency, never across currencies.</p>

<section class="grid">
<div>
<h2>At risk by currency</h2>
${totalsTable(
  'Currency',
  data.atRisk.byCurrency.map((t) => ({ ...t, key: currencyLabel(t.currency) })),
  false,
)}
<h2>At risk by partner</h2>
${totalsTable('Partner', data.atRisk.byPartner, true)}
<h2>At risk by kind</h2>
${totalsTable('Kind', data.atRisk.byKind, true)}
</div>
<div>
<h2>Amount at risk by partner</h2>
${partnerCharts(data.atRisk.byPartner)}
<h2>Unsettled discrepancies by kind</h2>
${barChart(
  'Unsettled discrepancies by kind',
  countBy(data.atRisk.byKind).map(([kind, count]) => ({
    label: kind,
    value: new Decimal(count),
    text: formatCount(count),
  })),
)}
</div>
</section>

<section>
<h2>Ageing of unsettled discrepancies</h2>
${ageingTable(data)}
${barChart(
  'Unsettled discrepancies by age',
  data.atRisk.ageing.map((a) => ({
    label: a.bucket,
    value: new Decimal(a.count),
    text: formatCount(a.count),
  })),
)}
</section>

<section>
<h2>Discrepancies</h2>
<p class="meta">${shown === data.totalRows ? `${formatCount(shown)} discrepancies` : `first ${formatCount(shown)} of ${formatCount(data.totalRows)} discrepancies (export CSV for all)`}</p>
${discrepancyTable(data)}
</section>
</body>
</html>
`;
}

const CSS = `
:root { --ink: #1d2330; --muted: #5b6475; --line: #d8dce4; --bar: #2f6fb0; --bg: #f5f6f8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; color: var(--ink);
  margin: 0 auto; padding: 24px; max-width: 1200px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.meta, .note { color: var(--muted); margin: 4px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-width: 180px; }
.card .big { font-size: 22px; font-weight: 600; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 24px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.wrap { word-break: break-word; max-width: 320px; }
td.nowrap { white-space: nowrap; }
.status-open { color: #a4251b; font-weight: 600; }
.status-acknowledged { color: #8a5a00; }
.status-resolved, .status-dismissed { color: var(--muted); }
svg { display: block; max-width: 100%; height: auto; margin: 4px 0 12px; }
svg text { font: 12px system-ui, Arial, sans-serif; fill: var(--ink); }
svg .bar { fill: var(--bar); }
svg .chart-title { font-weight: 600; }
@page { size: A4 landscape; margin: 12mm; }
@media print {
  body { padding: 0; max-width: none; font-size: 10pt; }
  .grid { display: block; }
  .card, th { background: none; }
  section { break-inside: auto; }
  h2 { break-after: avoid; }
  svg, .card, tr { break-inside: avoid; }
  thead { display: table-header-group; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
`;

function describeFilter(filter: DiscrepancyFilter): string {
  const parts: string[] = [];
  if (filter.status?.length) parts.push(`status ${filter.status.join(', ')}`);
  if (filter.partner?.length) parts.push(`partner ${filter.partner.join(', ')}`);
  if (filter.kind?.length) parts.push(`kind ${filter.kind.join(', ')}`);
  if (filter.since) parts.push(`since ${filter.since.toISOString()}`);
  if (filter.search?.trim()) parts.push(`matching "${filter.search.trim()}"`);
  return parts.length ? `filter: ${parts.join('; ')}` : 'all discrepancies';
}

/** A count with digits grouped: `1000000` -> `1,000,000`. */
function formatCount(n: number): string {
  return formatAmount(String(n));
}

function currencyLabel(currency: string | null): string {
  return currency ?? '(no currency)';
}

function totalsTable(heading: string, rows: GroupTotal<string>[], withCurrency: boolean): string {
  if (rows.length === 0) return '<p class="meta">No unsettled discrepancies.</p>';
  return `<table>
<thead><tr><th>${escapeHtml(heading)}</th>${withCurrency ? '<th>Currency</th>' : ''}<th class="num">Unsettled</th><th class="num">of which acknowledged</th><th class="num">Amount at risk</th></tr></thead>
<tbody>
${rows
  .map(
    (r) =>
      `<tr><td class="wrap">${escapeHtml(r.key)}</td>${withCurrency ? `<td>${escapeHtml(currencyLabel(r.currency))}</td>` : ''}<td class="num">${formatCount(r.count)}</td><td class="num">${formatCount(r.acknowledged.count)}</td><td class="num">${amountWithUnknown(r)}</td></tr>`,
  )
  .join('\n')}
</tbody>
</table>`;
}

/** `N open, M acknowledged`: the two statuses behind an unsettled count. */
function splitCounts(byCurrency: CurrencyTotal[]): string {
  const count = byCurrency.reduce((sum, t) => sum + t.count, 0);
  const acknowledged = byCurrency.reduce((sum, t) => sum + t.acknowledged.count, 0);
  return `${formatCount(count - acknowledged)} open, ${formatCount(acknowledged)} acknowledged`;
}

function amountWithUnknown(total: CurrencyTotal): string {
  const amount = escapeHtml(formatAmount(total.amountAtRisk, total.currency));
  return total.withoutAmount ? `${amount} <small>(+${total.withoutAmount} unknown)</small>` : amount;
}

function ageingTable(data: SummaryData): string {
  const currencies = [...new Set(data.atRisk.byCurrency.map((t) => t.currency))];
  return `<table>
<thead><tr><th>Waiting for</th><th class="num">Unsettled</th>${currencies.map((c) => `<th class="num">At risk ${escapeHtml(currencyLabel(c))}</th>`).join('')}</tr></thead>
<tbody>
${data.atRisk.ageing
  .map((a) => {
    const cells = currencies.map((c) => {
      const total = a.byCurrency.find((t) => t.currency === c);
      return `<td class="num">${total ? amountWithUnknown(total) : '&ndash;'}</td>`;
    });
    return `<tr><td>${escapeHtml(a.bucket)}</td><td class="num">${formatCount(a.count)}</td>${cells.join('')}</tr>`;
  })
  .join('\n')}
</tbody>
</table>`;
}

/** One chart per currency: bars of the amount at risk (open and acknowledged) per partner, scaled within that currency. */
function partnerCharts(byPartner: GroupTotal<string>[]): string {
  const currencies = [...new Set(byPartner.map((t) => t.currency))];
  if (currencies.length === 0) return '<p class="meta">No unsettled discrepancies.</p>';
  return currencies
    .map((currency) =>
      barChart(
        `Amount at risk by partner, ${currencyLabel(currency)}`,
        byPartner
          .filter((t) => t.currency === currency)
          .map((t) => ({
            label: t.key,
            value: new Decimal(t.amountAtRisk),
            text: `${formatAmount(t.amountAtRisk, currency)} ${currencyLabel(currency)}`,
          })),
      ),
    )
    .join('\n');
}

function countBy(rows: GroupTotal<string>[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.key, (counts.get(row.key) ?? 0) + row.count);
  return [...counts];
}

let chartCounter = 0;

/** A horizontal bar chart as inline SVG; labels are escaped, bar lengths are exact ratios (decimal.js). */
function barChart(title: string, bars: { label: string; value: Decimal; text: string }[]): string {
  const id = `chart-${++chartCounter}`;
  const labelWidth = 150;
  const barArea = 300;
  const valueWidth = 170;
  const rowHeight = 22;
  const top = 24;
  const height = top + Math.max(1, bars.length) * rowHeight + 6;
  const width = labelWidth + barArea + valueWidth;
  const max = bars.reduce((m, b) => Decimal.max(m, b.value), new Decimal(0));
  const rows = bars.map((bar, i) => {
    const y = top + i * rowHeight;
    const length = max.isZero() || bar.value.isNegative() ? 0 : bar.value.div(max).times(barArea).toNumber();
    const label = bar.label.length > 26 ? `${bar.label.slice(0, 25)}…` : bar.label;
    return `<text x="0" y="${y + 14}">${escapeHtml(label)}<title>${escapeHtml(bar.label)}</title></text>
<rect class="bar" x="${labelWidth}" y="${y + 3}" width="${length.toFixed(1)}" height="14"></rect>
<text x="${(labelWidth + length + 6).toFixed(1)}" y="${y + 14}">${escapeHtml(bar.text)}</text>`;
  });
  return `<svg role="img" aria-labelledby="${id}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">
<title id="${id}">${escapeHtml(title)}</title>
<text class="chart-title" x="0" y="14">${escapeHtml(title)}</text>
${bars.length ? rows.join('\n') : `<text x="0" y="${top + 14}">nothing unsettled</text>`}
</svg>`;
}

function discrepancyTable(data: SummaryData): string {
  if (data.rows.length === 0) return '<p class="meta">No discrepancies match.</p>';
  return `<table>
<thead><tr><th class="num">Id</th><th>Raised</th><th>Partner</th><th>Kind</th><th>Status</th><th>Reference</th><th>Partner reference</th><th class="num">Amount at risk</th><th>Summary</th><th>Assignee</th></tr></thead>
<tbody>
${data.rows
  .map(
    (r) =>
      `<tr><td class="num">${escapeHtml(r.id)}</td><td class="nowrap">${escapeHtml(r.createdAt.toISOString().slice(0, 16).replace('T', ' '))}</td><td>${escapeHtml(r.partner)}</td><td>${escapeHtml(r.kind)}</td><td class="status-${escapeHtml(r.status)}">${escapeHtml(r.status)}</td><td class="wrap">${escapeHtml(r.reference)}</td><td class="wrap">${escapeHtml(r.partnerReference)}</td><td class="num">${r.amountAtRisk === null ? '&ndash;' : `${escapeHtml(formatAmount(r.amountAtRisk, r.currency))} ${escapeHtml(r.currency)}`}</td><td class="wrap">${escapeHtml(r.summary)}</td><td>${escapeHtml(r.assignee)}</td></tr>`,
  )
  .join('\n')}
</tbody>
</table>`;
}
