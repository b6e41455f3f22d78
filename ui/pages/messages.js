import { html } from '../lib/ui.js';

export function Messages() {
  return html`<section>
    <h1>Messages</h1>
    <p>Coming next.</p>
  </section>`;
}
