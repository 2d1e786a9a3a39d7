/**
 * One discrepancy's page: its facts, the intent and attempts behind it, the partner's rows, the run that
 * raised it, its history, and the form to decide it (only the actions its status allows).
 */

import type {
  DiscrepancyDetail,
  PartnerRecordView,
  ReviewAction,
} from '../discrepancies/discrepancyTypes.js';
import type { Proposal } from '../discrepancies/fourEyes.js';
import { allowedActions } from '../discrepancies/transitions.js';
import type { Attempt } from '../shared/types.js';
import { formatAge, formatInstant, humanise } from './format.js';
import { html, type SafeHtml } from './html.js';
import { amountCell, type Flash, kindTag, layout, statusBadge, type Viewer } from './layout.js';

export interface DetailView {
  viewer: Viewer;
  detail: DiscrepancyDetail;
  flash: Flash | null;
  /** What the person typed, kept when the action was refused. */
  form?: { note?: string; assignee?: string };
  now?: Date;
  /** A proposal to resolve or dismiss waiting for a second resolver (four eyes), if any. */
  proposal?: Proposal | null;
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

  const proposal = view.proposal ?? null;
  const mine = proposal !== null && proposal.proposedBy === viewer.name;
  const proposalCard = proposal
    ? html`<div class="card actions proposal">
  <h2>Waiting for a second resolver</h2>
  <p><strong class="proposer">${proposal.proposedBy}</strong> proposes to <strong>${proposal.action}</strong> this discrepancy (the amount is above the approval threshold): <span class="proposal-note">${proposal.note}</span></p>
  ${
    !viewer.canDecide
      ? html`<p class="muted">A resolver other than ${proposal.proposedBy} approves or rejects it.</p>`
      : mine
        ? html`<p class="muted own">You proposed this: another resolver must approve or reject it.</p>`
        : viewer.sharedToken
          ? html`<p class="muted shared-token">Signed in with the shared review token, which is nobody in particular: a resolver signed in with their own token approves or rejects it.</p>`
          : html`<form method="post" action="/discrepancies/${d.id}/approval">
    <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
    <label>Your note (required) <textarea name="note" placeholder="What you checked before approving" required></textarea></label>
    <p class="muted small">Recorded as <strong>${viewer.name ?? ''}</strong>.</p>
    <div class="buttons">
      <button type="submit" name="decision" value="approve" class="good">Approve ${proposal.action}</button>
      <button type="submit" name="decision" value="reject">Reject</button>
    </div>
  </form>`
  }
</div>`
    : null;

  const actionCard = proposalCard
    ? proposalCard
    : !viewer.canDecide
      ? html`<div class="card"><h2>Decision</h2><p>This discrepancy is ${statusBadge(d.status)}. As a ${viewer.role ?? 'viewer'} you can read and export; a resolver decides.</p></div>`
      : actions.length
        ? html`<div class="card actions">
  <h2>Decide</h2>
  <form method="post" action="/discrepancies/${d.id}/review">
    <input type="hidden" name="_csrf" value="${viewer.csrf ?? ''}">
    <input type="hidden" name="seenAmount" value="${d.amountAtRisk ?? ''}">
    <input type="hidden" name="seenCurrency" value="${d.currency ?? ''}">
    <label>Note (required) <textarea name="note" placeholder="What was checked, what was decided and why" required>${form.note ?? ''}</textarea></label>
    <div class="row">
      <label>Assign to (optional) <input type="text" name="assignee" value="${form.assignee ?? ''}"></label>
    </div>
    <p class="muted small">Recorded as <strong>${viewer.name ?? ''}</strong>.</p>
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
    <tbody>${d.partnerRecords.map(recordRow)}</tbody>
  </table></div>`
      : html`<p class="muted">The partner reported no row for this.</p>`
  }
  ${
    d.reversals.length
      ? html`<h2>Reversals</h2>
  <p class="muted">Refunds and chargebacks the partner reported for these executions; they are not executions.</p>
  <div class="tablewrap solo"><table>
    <thead><tr><th>Source</th><th class="num">Line</th><th>Reference</th><th>Partner reference</th><th class="num">Amount</th><th>At (UTC)</th><th>Run</th></tr></thead>
    <tbody>${d.reversals.map(recordRow)}</tbody>
  </table></div>`
      : ''
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
    ${d.run.error === null ? '' : html`<div><dt>${d.run.status === 'abandoned' ? 'Why abandoned' : 'Error'}</dt><dd>${d.run.error}</dd></div>`}
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

/** One partner row (an execution or a reversal) as the detail page's tables show it. */
function recordRow(r: PartnerRecordView): SafeHtml {
  return html`<tr>
      <td class="ref">${r.source}</td>
      <td class="num">${r.line}</td>
      <td class="ref">${r.reference ?? '—'}</td>
      <td class="ref">${r.partnerReference ?? '—'}</td>
      <td class="num">${amountCell(r.amount, r.currency)}</td>
      <td class="nowrap">${formatInstant(r.executedAt, false)}</td>
      <td>#${r.runId}</td>
    </tr>`;
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
