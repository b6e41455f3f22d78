// The gregor web console: a hash-routed single page (Preact + htm), served by the broker at /ui.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { html } from './lib/ui.js';
import { Overview } from './pages/overview.js';
import { Topics } from './pages/topics.js';
import { Topic } from './pages/topic.js';
import { Messages } from './pages/messages.js';
import { Groups } from './pages/groups.js';
import { Group } from './pages/group.js';
import { Requests } from './pages/requests.js';
import { Login } from './pages/login.js';
import { api } from './lib/api.js';

const NAV = [
  ['#/', 'Overview'],
  ['#/topics', 'Topics'],
  ['#/groups', 'Consumer groups'],
  ['#/requests', 'Requests'],
];

function parse(hash) {
  const [path, query = ''] = hash.replace(/^#/, '').split('?');
  const parts = (path || '/')
    .split('/')
    .filter((p) => p !== '')
    .map((p) => decodeURIComponent(p));
  return { parts, query: new URLSearchParams(query) };
}

function page({ parts, query }) {
  const [a, b, c] = parts;
  if (a === undefined) return html`<${Overview} />`;
  if (a === 'topics' && b === undefined) return html`<${Topics} />`;
  if (a === 'topics' && c === 'messages') return html`<${Messages} topic=${b} query=${query} />`;
  if (a === 'topics') return html`<${Topic} name=${b} />`;
  if (a === 'groups' && b === undefined) return html`<${Groups} />`;
  if (a === 'groups') return html`<${Group} id=${b} />`;
  if (a === 'requests') return html`<${Requests} />`;
  return html`<section>
    <h1>Not found</h1>
    <p>No page at ${location.hash}. <a href="#/">Overview</a></p>
  </section>`;
}

const OPEN_HINT = 'gregor-console-open';

function openBefore() {
  try {
    return localStorage.getItem(OPEN_HINT) === '1';
  } catch {
    return false;
  }
}

function rememberOpen(open) {
  try {
    localStorage.setItem(OPEN_HINT, open ? '1' : '0');
  } catch {
    // storage refused: every load waits for /session
  }
}

function App() {
  const [route, setRoute] = useState(() => parse(location.hash));
  // null until /session answers; then {saslEnabled, user, mechanisms}. A console this browser saw
  // open (no SASL) before renders its page at once, so the page's data is asked for beside /session
  // rather than after it; should the broker now want a login, the page's 401 brings the form.
  const [session, setSession] = useState(() => (openBefore() ? { saslEnabled: false, user: null, mechanisms: [] } : null));
  const main = useRef(null);
  useEffect(() => {
    const on = () => {
      setRoute(parse(location.hash));
      // a new page: focus its main region so keyboard and screen-reader users start there
      main.current?.focus();
    };
    const gone = () => setSession((s) => (s === null ? s : { ...s, user: null }));
    window.addEventListener('hashchange', on);
    window.addEventListener('gregor:unauthenticated', gone);
    api('/session').then(
      (s) => {
        rememberOpen(!s.saslEnabled);
        setSession(s);
      },
      () => setSession({ saslEnabled: false, user: null, mechanisms: [] }),
    );
    return () => {
      window.removeEventListener('hashchange', on);
      window.removeEventListener('gregor:unauthenticated', gone);
    };
  }, []);
  const logout = async () => {
    setSession(await api('/session/logout', { method: 'POST', body: {} }));
  };
  const locked = session === null || (session.saslEnabled && session.user === null);
  const top = `#/${route.parts[0] ?? ''}`;
  let content;
  if (session === null) content = html`<p class="loading">Loading the console…</p>`;
  else if (locked) content = html`<${Login} mechanisms=${session.mechanisms} onLogin=${setSession} />`;
  else content = page(route);
  return html`<a class="skip" href="#main" onClick=${(e) => (e.preventDefault(), main.current?.focus())}>Skip to content</a>
    <header class="top">
      <a class="brand" href="#/">gregor</a>
      ${
        locked
          ? null
          : html`<nav aria-label="Main">
              <ul>
                ${NAV.map(([href, label]) => html`<li key=${href}><a href=${href} aria-current=${top === href ? 'page' : undefined}>${label}</a></li>`)}
              </ul>
            </nav>`
      }
      ${
        session?.user
          ? html`<div class="who">
              <span>Logged in as <strong>${session.user}</strong></span>
              <button type="button" class="secondary" onClick=${logout}>Log out</button>
            </div>`
          : null
      }
    </header>
    <main id="main" ref=${main} tabindex="-1">${content}</main>`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
