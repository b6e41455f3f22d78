// Shows a key, value or header ({encoding, base64, size, truncated}) as JSON, text, hex or base64.
// A row shows a one-line preview made from the first bytes only; the whole value (JSON
// pretty-printed) is decoded and drawn when the row's details are opened, so a table of long
// values (a live tail of 1 KB records) costs little to draw and stays narrow.
import { useState } from 'preact/hooks';
import { html } from './ui.js';

/** characters a preview shows at most */
export const PREVIEW_CHARS = 120;

function decode(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The first `n` bytes (about: a base64 quantum holds 3) without decoding the rest. */
function head(b64, n) {
  return decode(b64.length <= Math.ceil(n / 3) * 4 ? b64 : b64.slice(0, Math.ceil(n / 3) * 4));
}

const utf8 = new TextDecoder('utf-8');

export function asText(v) {
  return v.base64 === null ? null : utf8.decode(decode(v.base64));
}

const hexOf = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');

/** The view a value gets in "auto" mode. */
export function autoView(v) {
  return v.encoding === 'json' ? 'json' : v.encoding === 'text' ? 'text' : 'hex';
}

/** The bytes' text when they are all ASCII (each byte a character), else null. */
function ascii(bytes) {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] > 0x7f) return null;
  return utf8.decode(bytes);
}

/** A one-line preview of a value in a mode, and whether the whole value says more than it. */
function preview(v, mode) {
  if (mode === 'text' || mode === 'json') {
    // the common case first: PREVIEW_CHARS + 1 bytes (a 1 KB value is 8 times that), all ASCII,
    // make characters enough (after JSON's whitespace is folded) or are the whole value
    const n = PREVIEW_CHARS + 1;
    const whole = v.base64.length <= Math.ceil(n / 3) * 4;
    let text = ascii(head(v.base64, n));
    if (text !== null && mode === 'json') text = text.replace(/\s+/g, ' ');
    if (text !== null && (whole || text.length > PREVIEW_CHARS)) {
      const cut = text.length > PREVIEW_CHARS || !whole;
      return { text: cut ? `${text.slice(0, PREVIEW_CHARS)}…` : text, cut };
    }
  }
  return previewSlow(v, mode);
}

/** preview() for any bytes: enough of them for PREVIEW_CHARS characters of up to 4 bytes each. */
function previewSlow(v, mode) {
  // bytes enough for PREVIEW_CHARS characters (UTF-8: up to 4 bytes each; hex: 3 characters a byte)
  const bytes = mode === 'hex' ? Math.ceil(PREVIEW_CHARS / 3) : PREVIEW_CHARS * 4;
  const whole = v.base64.length <= Math.ceil(bytes / 3) * 4;
  let text;
  if (mode === 'base64') text = v.base64.slice(0, PREVIEW_CHARS);
  else if (mode === 'hex') text = hexOf(head(v.base64, bytes));
  else {
    // a character cut at the end of the bytes is left out, not replaced (a streaming decode, in a
    // decoder of its own since it keeps the cut bytes)
    text = whole ? utf8.decode(head(v.base64, bytes)) : new TextDecoder('utf-8').decode(head(v.base64, bytes), { stream: true });
    if (mode === 'json') text = text.replace(/\s+/g, ' ');
  }
  const cut = text.length > PREVIEW_CHARS || !whole || (mode === 'base64' && v.base64.length > PREVIEW_CHARS);
  return { text: cut ? `${text.slice(0, PREVIEW_CHARS)}…` : text, cut };
}

/** The whole value in a mode (JSON pretty-printed when it parses). */
function full(v, mode) {
  if (mode === 'base64') return v.base64;
  if (mode === 'hex') return hexOf(decode(v.base64));
  const text = asText(v);
  if (mode !== 'json') return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * A value whose whole form is made only while its details are open. A row of the live tail gets
 * newer values in place (rows are keyed by position), so the details are open only for the value
 * that was opened: another value in the same place starts closed.
 */
function Expandable({ v, mode, summary }) {
  const [shown, setShown] = useState({ v: null, open: false });
  const open = shown.v === v && shown.open;
  return html`<details open=${open} onToggle=${(e) => setShown({ v, open: e.currentTarget.open })}>
    <summary><code>${summary}</code></summary>
    ${open && html`<pre>${full(v, mode)}</pre>`}
  </details>`;
}

export function render(v, view) {
  if (v.encoding === 'null' || v.base64 === null) return html`<span class="muted">null</span>`;
  const mode = view === 'auto' ? autoView(v) : view;
  const more = v.truncated ? html` <span class="pill">first ${v.base64.length} of ${v.size} bytes</span>` : '';
  const p = preview(v, mode);
  // a non-empty JSON object or array opens to its pretty form, as does anything longer than a preview
  const multiLine = mode === 'json' && /^\s*[[{]\s*[^\s\]}]/.test(p.text);
  if (!p.cut && !multiLine) return html`<code>${p.text}</code>${more}`;
  return html`<${Expandable} v=${v} mode=${mode} summary=${p.text} />${more}`;
}
