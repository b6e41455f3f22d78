import { html } from '../lib/ui.js';

export function Groups() {
  return html`<section>
    <h1>Groups</h1>
    <p>Coming next.</p>
  </section>`;
}
