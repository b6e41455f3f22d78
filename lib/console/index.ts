/**
 * The web console at /ui (issue 19), loaded on the first request under /ui (lib/admin/ui-routes.ts):
 * - GET /ui, /ui/: the page (dist/ui/index.html), with the CSRF cookie (security.ts);
 * - GET /ui/assets/<file>: the bundle built from ui/ (static.ts);
 * - /ui/api/...: the JSON API the page uses, over the broker's own services (one module per page:
 *   overview, topics, messages, groups, requests), behind a login when the broker has SASL enabled
 *   (auth.ts); each answer carries a Server-Timing header and GET /ui/api/timings the per-route
 *   cost (timing.ts). Every API answer is JSON; errors are
 *   {"error": "GREGOR_ERR_CONSOLE_*", "message": ...} with a 4xx status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseListener } from '../config.js';
import { ConsoleAuth } from './auth.js';
import { groupRoutes } from './groups.js';
import { ConsoleError, notFound, sendError, sendJson } from './http.js';
import { messageRoutes } from './messages.js';
import { overviewRoutes } from './overview.js';
import { requestRoutes } from './requests.js';
import { CsrfGuard } from './security.js';
import { StaticFiles } from './static.js';
import { ConsoleTimings, routeName } from './timing.js';
import { topicRoutes } from './topics.js';
import type { ApiRoute, ConsoleDeps, RouteContext, WebConsole } from './types.js';

function decodeParams(m: RegExpExecArray): string[] {
  return m.slice(1).map((p: string | undefined) => {
    try {
      return decodeURIComponent(p ?? '');
    } catch {
      return p ?? '';
    }
  });
}

export function createConsole(deps: ConsoleDeps): WebConsole {
  const { broker } = deps;
  const guard = new CsrfGuard(broker.config.bool('admin.listener.allow.remote'), () => broker.adminAddress);
  const files = new StaticFiles();
  const listenerName = parseListener(broker.config.brokerListeners[0] ?? 'PLAINTEXT://:9092').name;
  const auth = new ConsoleAuth(broker.config, () => deps.services.metadata);
  const open: ApiRoute[] = auth.routes();
  const timings = new ConsoleTimings();
  const routes: ApiRoute[] = [
    ...open,
    ...overviewRoutes(deps),
    ...topicRoutes(deps, listenerName),
    ...messageRoutes(deps, listenerName),
    ...groupRoutes(deps, listenerName),
    ...requestRoutes(deps),
    { method: 'GET', path: /^\/timings$/, handle: (_req, res) => sendJson(res, 200, { routes: timings.snapshot() }) },
  ];
  const names = new Map(routes.map((r) => [r, routeName(r.method, r.path)]));

  async function api(req: IncomingMessage, res: ServerResponse, path: string, ctx: RouteContext): Promise<void> {
    const method = req.method ?? 'GET';
    if (method !== 'GET') guard.checkMutation(req);
    if (!open.some((r) => r.path.test(path))) auth.require(req);
    let pathMatched = false;
    for (const r of routes) {
      const m = r.path.exec(path);
      if (m === null) continue;
      pathMatched = true;
      if (r.method !== method) continue;
      timings.start(res, names.get(r) ?? path);
      await r.handle(req, res, { url: ctx.url, params: decodeParams(m), body: ctx.body });
      return;
    }
    if (pathMatched) throw new ConsoleError(405, 'GREGOR_ERR_CONSOLE_BAD_REQUEST', `method ${method} not allowed on /ui/api${path}`);
    throw notFound(`no console API at /ui/api${path}`);
  }

  return {
    async handle(req, res, ctx) {
      const path = ctx.url.pathname;
      try {
        guard.checkHost(req);
        if (path === '/ui' || path === '/ui/') {
          if (req.method !== 'GET') throw new ConsoleError(405, 'GREGOR_ERR_CONSOLE_BAD_REQUEST', 'the page is read with GET');
          if (!files.send(res, 'index.html', { 'set-cookie': guard.cookieHeader }))
            sendJson(res, 503, {
              error: 'GREGOR_ERR_CONSOLE_NOT_BUILT',
              message: 'the console was not built (npm run build writes dist/ui/)',
            });
          return;
        }
        if (path.startsWith('/ui/assets/')) {
          if (req.method !== 'GET' || !files.send(res, path.slice('/ui/assets/'.length))) throw notFound(`no asset ${path}`);
          return;
        }
        if (path.startsWith('/ui/api/')) {
          await api(req, res, path.slice('/ui/api'.length), ctx);
          return;
        }
        throw notFound(`nothing at ${path}`);
      } catch (e) {
        if (e instanceof ConsoleError) {
          if (!res.headersSent) sendError(res, e);
          else res.end();
          return;
        }
        throw e;
      }
    },
  };
}
