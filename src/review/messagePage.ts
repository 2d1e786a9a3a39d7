/** A plain page with a title and one message: not found, a refused request, a bad filter, a server error. */
import { html } from './html.js';
import { layout, type Viewer } from './layout.js';

export function messagePage(options: { title: string; message: string; viewer: Viewer | null }): string {
  return layout({
    title: options.title,
    viewer: options.viewer,
    body: html`<div class="card"><h1>${options.title}</h1><p>${options.message}</p><p><a href="/">Back to the list</a></p></div>`,
  });
}
