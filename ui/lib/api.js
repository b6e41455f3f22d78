// The console's JSON API (/ui/api/...). Mutating calls carry the CSRF token from the page's cookie.
function csrfToken() {
  for (const part of document.cookie.split(';')) {
    const [k, v] = part.trim().split('=');
    if (k === 'gregor_csrf') return v ?? '';
  }
  return '';
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export async function api(path, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' };
  if (method !== 'GET') {
    headers['x-gregor-csrf'] = csrfToken();
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`/ui/api${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let data;
  try {
    data = text === '' ? null : JSON.parse(text);
  } catch {
    data = { message: text };
  }
  // the session ended (logout elsewhere, broker restart): the page shows the login form again
  if (res.status === 401 && !path.startsWith('/session')) window.dispatchEvent(new Event('gregor:unauthenticated'));
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export function enc(s) {
  return encodeURIComponent(s);
}
