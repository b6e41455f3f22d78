/** A call to a gregor's admin HTTP listener (`admin` of its GREGOR_READY line), for the benches that read its request log. */
export async function adminRequest(address: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await fetch(`http://${address}${path}`, init);
  if (!res.ok) throw new Error(`${method} ${path} on ${address}: HTTP ${res.status} ${await res.text()}`);
  const type = res.headers.get('content-type') ?? '';
  return type.includes('json') ? res.json() : res.text();
}
