/**
 * Cross-site request checks shared by the admin API's mutating routes (/v1/faults, /v1/requests) and
 * the web console (lib/console/security.ts). A page on another site can make a browser send a POST
 * to the admin listener (a form, or a fetch without a preflight), so a mutating request is refused
 * when:
 * - its Origin names another host than the one it was sent to (Origin "null" too: sandboxed pages,
 *   data: URLs), or its Sec-Fetch-Site is neither same-origin nor none (typed or bookmarked);
 * - for the /v1 routes, its body is not declared JSON: the content types a cross-site form or a
 *   preflight-less fetch can send (text/plain, application/x-www-form-urlencoded, multipart/form-data)
 *   are refused, and a cross-site fetch with `application/json` needs a CORS preflight that the
 *   listener never grants.
 * curl and scripts send no Origin and no Sec-Fetch-*: `curl -H 'content-type: application/json'
 * -d '{...}'` (or `--json '{...}'`) passes.
 */
import type { IncomingMessage } from 'node:http';
import type { AdminRoute } from './routes.js';

export const AdminErrorCode = {
  /** a mutating admin request from another site (Origin / Sec-Fetch-Site) */
  CROSS_SITE: 'GREGOR_ERR_ADMIN_CROSS_SITE',
  /** a mutating admin request whose body is not declared application/json */
  CONTENT_TYPE: 'GREGOR_ERR_ADMIN_CONTENT_TYPE',
} as const;

/** Why a request's Origin / Sec-Fetch-Site show it comes from another site, or null when they do not. */
export function crossSiteReason(req: IncomingMessage): string | null {
  const origin = req.headers.origin;
  if (origin === 'null') return 'Origin null';
  if (origin !== undefined) {
    let originHost: string;
    try {
      originHost = new URL(origin).host;
    } catch {
      return `Origin "${origin}" is not a URL`;
    }
    if (originHost !== req.headers.host) return `Origin ${origin} is not this listener's`;
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site ${site}`;
  return null;
}

/** Whether the request declares a JSON body (application/json, or a +json type). */
export function declaresJson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** A status error the admin server answers with its message (lib/admin/server.ts fail()). */
class CrossSiteError extends Error {
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'CrossSiteError';
  }
}

/** Throws 403 for a cross-site request, 415 for a POST whose body is not declared JSON. */
export function checkAdminMutation(req: IncomingMessage): void {
  const why = crossSiteReason(req);
  if (why !== null) throw new CrossSiteError(403, AdminErrorCode.CROSS_SITE, `cross-site request refused: ${why}`);
  if (req.method === 'POST' && !declaresJson(req))
    throw new CrossSiteError(
      415,
      AdminErrorCode.CONTENT_TYPE,
      `send the body as JSON with "content-type: application/json" (got ${req.headers['content-type'] ?? 'none'}); e.g. curl --json '{...}'`,
    );
}

/** The routes with every mutating one (POST, PUT, DELETE) behind checkAdminMutation. */
export function guardMutations(routes: AdminRoute[]): AdminRoute[] {
  return routes.map((r) =>
    r.method === 'GET'
      ? r
      : {
          ...r,
          handle: (req, res, ctx) => {
            checkAdminMutation(req);
            return r.handle(req, res, ctx);
          },
        },
  );
}
