// Shows a key, value or header ({encoding, base64, size, truncated}) as JSON, text, hex or base64.
import { html } from './ui.js';

function decode(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const utf8 = new TextDecoder('utf-8');

export function asText(v) {
  return v.base64 === null ? null : utf8.decode(decode(v.base64));
}

function hex(v) {
  return Array.from(decode(v.base64), (b) => b.toString(16).padStart(2, '0')).join(' ');
}

/** The view a value gets in "auto" mode. */
export function autoView(v) {
  return v.encoding === 'json' ? 'json' : v.encoding === 'text' ? 'text' : 'hex';
}

export function render(v, view) {
  if (v.encoding === 'null' || v.base64 === null) return html`<span class="muted">null</span>`;
  const mode = view === 'auto' ? autoView(v) : view;
  const more = v.truncated ? html` <span class="pill">first ${v.base64.length} of ${v.size} bytes</span>` : '';
  if (mode === 'json') {
    let pretty;
    try {
      pretty = JSON.stringify(JSON.parse(asText(v)), null, 2);
    } catch {
      return html`<code>${asText(v)}</code>${more}`;
    }
    if (pretty.length <= 80 && !pretty.includes('\n')) return html`<code>${pretty}</code>`;
    return html`<details>
        <summary><code>${JSON.stringify(JSON.parse(asText(v))).slice(0, 60)}…</code></summary>
        <pre>${pretty}</pre>
      </details>
      ${more}`;
  }
  if (mode === 'text') return html`<code>${asText(v)}</code>${more}`;
  if (mode === 'hex') return html`<code>${hex(v)}</code>${more}`;
  return html`<code>${v.base64}</code>${more}`;
}
