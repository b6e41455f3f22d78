import { html } from '../lib/ui.js';

export function Requests() {
  return html`<section>
    <h1>Requests</h1>
    <p>Coming next.</p>
  </section>`;
}
