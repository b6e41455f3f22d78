// The login form, shown when the broker has SASL enabled and the page has no session.
import { useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { ErrorNote, html } from '../lib/ui.js';

export function Login({ mechanisms, onLogin }) {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const s = await api('/session', { method: 'POST', body: { user, password } });
      setPassword('');
      onLogin(s);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<section aria-labelledby="login-title" class="login">
    <h1 id="login-title">Log in</h1>
    <p class="muted">
      This broker has SASL enabled: log in as one of its users
      (${mechanisms.filter((m) => m !== 'OAUTHBEARER').join(', ') || 'PLAIN or SCRAM'}).
    </p>
    <form onSubmit=${submit} aria-label="Log in">
      <label
        >User <input name="user" autocomplete="username" required value=${user} onInput=${(e) => setUser(e.currentTarget.value)}
      /></label>
      <label
        >Password
        <input
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value=${password}
          onInput=${(e) => setPassword(e.currentTarget.value)}
      /></label>
      <button type="submit" disabled=${busy}>Log in</button>
    </form>
    <${ErrorNote} error=${error} />
  </section>`;
}
