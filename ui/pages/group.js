import { html } from '../lib/ui.js';

export function Group() {
  return html`<section>
    <h1>Group</h1>
    <p>Coming next.</p>
  </section>`;
}
