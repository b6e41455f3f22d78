import { html } from '../lib/ui.js';

export function Topics() {
  return html`<section>
    <h1>Topics</h1>
    <p>Coming next.</p>
  </section>`;
}
