/** The sign-in form and the sign-out confirmation (signing out is a POST that carries the CSRF token). */
import { html } from './html.js';
import { layout, type Viewer } from './layout.js';

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
