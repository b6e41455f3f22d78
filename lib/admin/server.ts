/**
 * The admin HTTP listener (`admin.listener`): Node's own http server dispatching to AdminRoutes
 * (lib/admin/routes.ts). The first route whose method and path match handles a request; a path that
 * some route serves under another method gets 405 (with Allow), any other path 404. Clients that are
 * not on a loopback address are refused with 403 unless `admin.listener.allow.remote=true`. A route
 * may throw an AdminHttpError (or any error with a 4xx `status`) to answer with that status and its
 * message as text. Every refused or bad request is logged once.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { bindServer } from '../network/bind.js';
import type { Logger } from '../observability/logger.js';
import type { AdminRoute } from './routes.js';

/** Request bodies larger than this are refused (413). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Thrown by a route to answer `status` with `message` (text/plain). */
export class AdminHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'AdminHttpError';
  }
}

export interface AdminServerOptions {
  host: string;
  /** 0: a free port */
  port: number;
  /** admin.listener.allow.remote: serve clients that are not on a loopback address */
  allowRemote: boolean;
  routes: readonly AdminRoute[];
  logger: Logger;
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/** Whether a client at `remoteAddress` may use the admin API. */
export function adminClientAllowed(remoteAddress: string | undefined, allowRemote: boolean): boolean {
  return allowRemote || isLoopback(remoteAddress);
}

export function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${JSON.stringify(value)}\n`);
}

export class AdminServer {
  private readonly server: http.Server;
  private readonly logger: Logger;
  private bound: { host: string; port: number } | null = null;
  private closing: Promise<void> | null = null;

  constructor(private readonly opts: AdminServerOptions) {
    this.logger = opts.logger.child({ listener: 'admin' });
    this.server = http.createServer((req, res) => void this.serve(req, res));
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      this.logger.info({ err: err.message, code: err.code }, 'admin: bad HTTP request');
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      else socket.destroy();
    });
  }

  /** Binds; resolves with the bound address (the real port when 0 was asked). */
  async listen(): Promise<{ host: string; port: number }> {
    this.bound = await bindServer(this.server, this.opts.host, this.opts.port, (err) =>
      this.logger.error({ err: err.message }, 'admin listener error'),
    );
    this.logger.info({ host: this.bound.host, port: this.bound.port, allowRemote: this.opts.allowRemote }, 'admin listening');
    return this.bound;
  }

  /** The underlying http.Server (the tests hand it connections from other addresses through its 'connection' event). */
  get httpServer(): http.Server {
    return this.server;
  }

  /** host:port as clients reach it (a wildcard bind is reported as loopback), or null before listen(). */
  get address(): string | null {
    if (this.bound === null) return null;
    const h = this.bound.host;
    const host = h === '0.0.0.0' ? '127.0.0.1' : h === '::' ? '::1' : h;
    return host.includes(':') ? `[${host}]:${this.bound.port}` : `${host}:${this.bound.port}`;
  }

  /** Stops accepting and closes every connection (idle keep-alive ones at once). */
  close(): Promise<void> {
    this.closing ??= new Promise((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      // requests in progress (a scrape) get a moment to finish
      setTimeout(() => this.server.closeAllConnections(), 1000).unref();
    });
    return this.closing;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const remote = req.socket.remoteAddress;
    const url = new URL(req.url ?? '/', 'http://admin');
    const where = { method, path: url.pathname, remoteAddress: remote };
    if (!adminClientAllowed(remote, this.opts.allowRemote)) {
      this.logger.warn(where, 'admin: refused a non-loopback client (admin.listener.allow.remote=false)');
      req.resume();
      sendText(
        res,
        403,
        'forbidden: the admin listener serves loopback clients only (set admin.listener.allow.remote=true to allow others)',
      );
      return;
    }
    let pathMatched = false;
    const allowed = new Set<string>();
    for (const route of this.opts.routes) {
      let match: RegExpExecArray | null = null;
      if (typeof route.path === 'string') {
        if (route.path !== url.pathname) continue;
      } else {
        match = route.path.exec(url.pathname);
        if (match === null) continue;
      }
      pathMatched = true;
      allowed.add(route.method);
      if (route.method !== method) continue;
      try {
        const body = await readBody(req);
        await route.handle(req, res, { url, match, body });
      } catch (e) {
        this.fail(res, where, e);
      }
      return;
    }
    req.resume();
    if (pathMatched) {
      this.logger.info(where, 'admin: method not allowed');
      sendText(res, 405, `method ${method} not allowed on ${url.pathname} (allowed: ${[...allowed].join(', ')})`, {
        allow: [...allowed].join(', '),
      });
      return;
    }
    this.logger.info(where, 'admin: unknown path');
    sendText(res, 404, `not found: ${url.pathname}`);
  }

  private fail(res: ServerResponse, where: Record<string, unknown>, e: unknown): void {
    const status = (e as { status?: unknown }).status;
    const message = e instanceof Error ? e.message : String(e);
    if (typeof status === 'number' && status >= 400 && status < 500) {
      this.logger.info({ ...where, status, reason: message }, 'admin: bad request');
      if (!res.headersSent) sendText(res, status, message);
      else res.end();
      return;
    }
    this.logger.error({ ...where, err: e }, 'admin: route failed');
    if (!res.headersSent) sendText(res, 500, `internal error: ${message}`);
    else res.destroy();
  }
}

/** The request body (empty for GET and HEAD); 413 past MAX_BODY_BYTES. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  if (req.method === 'GET' || req.method === 'HEAD') {
    req.resume();
    return Promise.resolve(Buffer.alloc(0));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        // the rest is read and dropped; the answer goes out at once
        chunks.length = 0;
        reject(new AdminHttpError(413, `request body over ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

/** Parses a JSON request body (400 when it is not JSON). */
export function jsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch (e) {
    throw new AdminHttpError(400, `request body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}
