import { html } from '../lib/ui.js';

export function Topic() {
  return html`<section>
    <h1>Topic</h1>
    <p>Coming next.</p>
  </section>`;
}
